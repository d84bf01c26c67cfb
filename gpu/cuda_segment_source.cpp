// CudaSegmentSource over the CUDA runtime. See cuda_segment_source.hpp.
#include "cuda_segment_source.hpp"

#include <cuda_runtime_api.h>

#include "cuda_context.hpp"

namespace ndgc::cuda {

bool CudaSegmentSource::enter() noexcept {
  if (cudaSetDevice(device_) == cudaSuccess) return true;
  cudaGetLastError();
  return false;
}

void* CudaSegmentSource::allocate_segment(std::size_t bytes) noexcept {
  void* p = nullptr;
  if (!enter() || cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();  // an out-of-memory error is not sticky; clear it for the next call
    return nullptr;
  }
  return p;
}

void CudaSegmentSource::free_segment(void* ptr, std::size_t) noexcept {
  // cudaFree waits for the device first, so no queued kernel still reads the segment.
  if (ptr && enter()) cudaFree(ptr);
}

memory::StreamId CudaSegmentSource::current_stream() noexcept {
  try {
    return reinterpret_cast<memory::StreamId>(stream(device_));
  } catch (...) {
    return 0;
  }
}

void* CudaSegmentSource::record_event(memory::StreamId s) noexcept {
  if (!enter()) return nullptr;
  cudaEvent_t e = nullptr;
  if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  if (cudaEventRecord(e, reinterpret_cast<cudaStream_t>(s)) != cudaSuccess) {
    cudaGetLastError();
    cudaEventDestroy(e);
    synchronize();  // no event: make "nothing to wait for" true
    return nullptr;
  }
  return e;
}

bool CudaSegmentSource::event_done(void* event) noexcept {
  if (!event) return true;
  cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  if (status != cudaSuccess) cudaGetLastError();
  return true;
}

void CudaSegmentSource::destroy_event(void* event) noexcept {
  if (event) cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

void CudaSegmentSource::synchronize() noexcept {
  if (enter() && cudaDeviceSynchronize() != cudaSuccess) cudaGetLastError();
}

std::size_t CudaSegmentSource::driver_free_bytes() noexcept {
  std::size_t free = 0, total = 0;
  if (!enter() || cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return free;
}

std::size_t CudaSegmentSource::driver_total_bytes() noexcept {
  std::size_t free = 0, total = 0;
  if (!enter() || cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return total;
}

}  // namespace ndgc::cuda
