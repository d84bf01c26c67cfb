// The throwing side of CUDA_CHECK / CUBLAS_CHECK (cuda_check.hpp).
#include "cuda_check.hpp"

#include <fmt/format.h>

namespace ndgc::cuda {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a sticky-free error so the next call is not blamed for it
  std::string what = fmt::format("CUDA: {} failed: {} ({}) at {}:{}", call, cudaGetErrorString(status),
                                 cudaGetErrorName(status), file, line);
  if (status == cudaErrorMemoryAllocation) throw OutOfMemory(what, 0, 0, 0);
  throw CudaError(what);
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw CudaError(fmt::format("cuBLAS: {} failed: {} ({}) at {}:{}", call, cublasGetStatusString(status),
                              cublasGetStatusName(status), file, line));
}

}  // namespace ndgc::cuda
