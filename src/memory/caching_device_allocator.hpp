// CachingDeviceAllocator: a DeviceAllocator (accounting, limits, the OOM
// ladder) over a CachingAllocator (the policy) over any SegmentSource (the
// driver). gpu/ registers one per device over cudaMalloc; the host tests
// register one over HostSegmentSource.
//
//   auto* a = new CachingDeviceAllocator(Device::gpu(0), std::make_unique<CudaSegmentSource>(0));
//   memory::register_allocator(Device::gpu(0), a);
//   a->record_stream(ptr, other_stream);   // the engine: an op on another stream uses ptr
//
// Accounting: current_bytes / limits count the bytes callers asked for (as on
// the CPU); reserved_bytes, cached_bytes, segments and active_blocks come
// from the caching allocator (block sizes, rounded to 512 B). Allocations use
// the source's current_stream(); a free goes back to the block's own stream
// (Note [Stream-ordered reuse]). Thread-safety: as DeviceAllocator and
// CachingAllocator: every member from any thread.
#pragma once

#include <memory>

#include "memory/allocator.hpp"
#include "memory/caching_allocator.hpp"
#include "memory/segment_source.hpp"

namespace ndgc::memory {

class CachingDeviceAllocator final : public DeviceAllocator {
 public:
  CachingDeviceAllocator(Device device, std::unique_ptr<SegmentSource> source, CachingConfig config = {});
  ~CachingDeviceAllocator() override;

  // Called by the engine when an op on `stream` uses a block allocated on another stream.
  void record_stream(void* ptr, StreamId stream) noexcept;
  void empty_cache() noexcept override;
  void open_private_pool(std::uint64_t pool) noexcept override { cache_.open_private_pool(pool); }
  void close_private_pool() noexcept override { cache_.close_private_pool(); }
  void release_private_pool(std::uint64_t pool) noexcept override {
    cache_.release_private_pool(pool, source_->current_stream());
  }

  CachingAllocator& cache() noexcept { return cache_; }
  SegmentSource& source() noexcept { return *source_; }

 protected:
  void* raw_allocate(std::size_t bytes) noexcept override;
  void raw_deallocate(void* ptr, std::size_t bytes) noexcept override;
  void backend_stats(Stats& s) const noexcept override;
  std::string describe_for_oom() const override;
  const char* limit_variable() const noexcept override { return "NDGC_GPU_MAX_BYTES"; }

 private:
  std::unique_ptr<SegmentSource> source_;  // declared first: the cache gives its segments back to it
  CachingAllocator cache_;
};

}  // namespace ndgc::memory
