// CudaDirectAllocator over the CUDA runtime. See cuda_direct_allocator.hpp.
#include "cuda_direct_allocator.hpp"

#include <cuda_runtime_api.h>

namespace ndgc::cuda {

void* CudaDirectAllocator::raw_allocate(std::size_t bytes) noexcept {
  void* p = nullptr;
  if (cudaSetDevice(device_) != cudaSuccess || cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();  // out of memory: DeviceAllocator runs the pressure handler, then throws OutOfMemory
    return nullptr;
  }
  return p;
}

void CudaDirectAllocator::raw_deallocate(void* ptr, std::size_t) noexcept {
  if (cudaSetDevice(device_) == cudaSuccess) cudaFree(ptr);
}

}  // namespace ndgc::cuda
