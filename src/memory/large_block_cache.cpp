// The process-wide cache of large host blocks. See Note [Large host blocks]
// in large_block_cache.hpp.
#include "memory/large_block_cache.hpp"

#include <cstdint>

#include <sys/mman.h>

#include "memory/caching_allocator.hpp"
#include "support/assert.hpp"

namespace ndgc::memory {
namespace {

constexpr std::size_t kHugePage = std::size_t(2) << 20;

// Segments mapped by ndgc. A segment of the large pool (more than 2 MiB) is
// aligned to 2 MiB and advised as transparent huge pages; a small-pool
// segment (2 MiB, blocks up to 1 MiB) is not, so that a few touched pages of
// it do not make 2 MiB resident. Host memory has no streams: nothing is
// pending, every event is done.
class MappedSegments final : public SegmentSource {
 public:
  void* allocate_segment(std::size_t size) noexcept override {
    const bool huge = size > kSmallSegment;
    const std::size_t length = huge ? size + kHugePage : size;
    void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    if (!huge) return p;
    const auto start = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
    if (aligned > start) munmap(p, aligned - start);
    if (start + length > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), start + length - aligned - size);
    madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
    return reinterpret_cast<void*>(aligned);
  }
  void free_segment(void* ptr, std::size_t size) noexcept override { munmap(ptr, size); }
  void* record_event(StreamId) noexcept override { return nullptr; }
  bool event_done(void*) noexcept override { return true; }
  void destroy_event(void*) noexcept override {}
  void synchronize() noexcept override {}
};

// Never destroyed: arrays closed during static destruction (a global
// manager) still free their blocks here.
CachingAllocator& cache() noexcept {
  static auto* const allocator = new CachingAllocator(*new MappedSegments);
  return *allocator;
}

}  // namespace

void* large_allocate(std::size_t bytes) noexcept {
  NDGC_ASSERT(bytes >= kLargeBlockBytes, "large_allocate: a small block");
  // A refused mapping is retried once after the wholly free segments are
  // unmapped (CachingAllocator::allocate); past that, the OOM ladder.
  return cache().allocate(bytes, 0);
}

void large_free(void* block) noexcept {
  [[maybe_unused]] const bool ours = cache().free(block);
  NDGC_ASSERT(ours, "large_free: not a block of large_allocate");
}

LargeCacheStats large_cache_stats() noexcept {
  const CachingStats c = cache().stats();
  LargeCacheStats s;
  s.cached_bytes = c.cached_bytes();
  s.mapped_bytes = c.reserved_bytes;
  s.mapped_blocks = c.segments;
  s.maps = c.segment_allocs;
  return s;
}

void release_large_blocks() noexcept { cache().empty_cache(); }

void set_large_cache_budget(std::uint64_t bytes) noexcept { cache().set_max_cached_bytes(std::size_t(bytes)); }

std::uint64_t large_cache_budget() noexcept { return cache().max_cached_bytes(); }

}  // namespace ndgc::memory
