// CUDA_CHECK / CUBLAS_CHECK: every runtime and cuBLAS call's status becomes a
// typed ndgc error naming the call, never an abort.
//
// cudaErrorMemoryAllocation becomes OutOfMemory (so the OOM paths catch it);
// anything else CudaError, an ndgc::Error. Thread-safe (no state).
#pragma once

#include <cstddef>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "ndgc/error.hpp"

namespace ndgc::cuda {

// A CUDA runtime or cuBLAS call failed; the message names the call and the error.
class CudaError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace ndgc::cuda

#define CUDA_CHECK(call)                                                                       \
  do {                                                                                         \
    cudaError_t ndgc_status_ = (call);                                                         \
    if (ndgc_status_ != cudaSuccess) ::ndgc::cuda::throw_cuda_error(ndgc_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define CUBLAS_CHECK(call)                                                                     \
  do {                                                                                         \
    cublasStatus_t ndgc_status_ = (call);                                                      \
    if (ndgc_status_ != CUBLAS_STATUS_SUCCESS)                                                 \
      ::ndgc::cuda::throw_cublas_error(ndgc_status_, #call, __FILE__, __LINE__);               \
  } while (0)

// After a kernel launch: a bad configuration shows up here, not at the next sync.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
