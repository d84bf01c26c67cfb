// CachingDeviceAllocator: the caching policy behind the DeviceAllocator door.
// The ladder itself is DeviceAllocator's (Note [OOM ladder]); this file maps
// its hooks onto the CachingAllocator and the source.
#include "memory/caching_device_allocator.hpp"

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

namespace ndgc::memory {

CachingDeviceAllocator::CachingDeviceAllocator(Device device, std::unique_ptr<SegmentSource> source,
                                               CachingConfig config)
    : DeviceAllocator(device), source_(std::move(source)), cache_(*source_, config) {}

CachingDeviceAllocator::~CachingDeviceAllocator() = default;

void* CachingDeviceAllocator::raw_allocate(std::size_t bytes) noexcept {
  return cache_.allocate(bytes, source_->current_stream());
}

void CachingDeviceAllocator::raw_deallocate(void* ptr, std::size_t) noexcept {
  if (!cache_.free(ptr)) {
    // Not a block of this allocator: a double free or a foreign pointer.
    // Continuing would corrupt the accounting and, on a GPU, device memory.
    std::fprintf(stderr, "ndgc: CachingDeviceAllocator(%s): free of %p, which it did not hand out\n",
                 device().to_string().c_str(), ptr);
    std::abort();
  }
}

void CachingDeviceAllocator::record_stream(void* ptr, StreamId stream) noexcept { cache_.record_stream(ptr, stream); }

void CachingDeviceAllocator::empty_cache() noexcept { cache_.empty_cache(); }

void CachingDeviceAllocator::backend_stats(Stats& s) const noexcept {
  CachingStats c = cache_.stats();
  s.reserved_bytes = c.reserved_bytes;
  s.peak_reserved_bytes = c.peak_reserved_bytes;
  s.cached_bytes = c.cached_bytes();
  s.active_blocks = c.active_blocks;
  s.segments = c.segments;
  // The cache's own free-and-retry, beside the ladder's.
  s.alloc_retries += c.alloc_retries;
}

std::string CachingDeviceAllocator::describe_for_oom() const {
  CachingStats c = cache_.stats();
  std::size_t total = source_->driver_total_bytes(), free = source_->driver_free_bytes();
  return fmt::format("{} has {}; ndgc holds {} in blocks handed out and {} reserved in {} segments ({} cached); "
                     "the driver reports {} free.",
                     device().to_string(), total ? format_bytes(total) + " in all" : "an unknown capacity",
                     format_bytes(c.allocated_bytes), format_bytes(c.reserved_bytes), c.segments,
                     format_bytes(c.cached_bytes()), total ? format_bytes(free) : "an unknown amount");
}

}  // namespace ndgc::memory
