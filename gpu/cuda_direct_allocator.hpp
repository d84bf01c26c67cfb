// CudaDirectAllocator: a DeviceAllocator straight over cudaMalloc / cudaFree,
// used until the caching allocator (memory/caching_device_allocator.hpp) is
// in the build; cuda_registration.cpp picks whichever is there.
//
// Every allocation calls the driver (slow, ~µs to ms) and every free waits for
// the device (cudaFree synchronises), which also makes frees stream-ordered:
// no queued kernel can still read a block when it goes back. Accounting and
// limits come from DeviceAllocator. Thread-safe.
#pragma once

#include "memory/allocator.hpp"

namespace ndgc::cuda {

class CudaDirectAllocator final : public memory::DeviceAllocator {
 public:
  explicit CudaDirectAllocator(int device) : DeviceAllocator(Device::gpu(device)), device_(device) {}

 protected:
  void* raw_allocate(std::size_t bytes) noexcept override;
  void raw_deallocate(void* ptr, std::size_t bytes) noexcept override;

 private:
  int device_;
};

}  // namespace ndgc::cuda
