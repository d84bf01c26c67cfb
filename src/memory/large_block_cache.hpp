// Host blocks of kLargeBlockBytes and more: mapped by ndgc, kept mapped for
// reuse under a byte budget.
//
// Note [Large host blocks]
// A training step frees and allocates the same large buffers every step
// (activations, columns, their gradients). glibc gives such blocks back to
// the kernel (munmap above its mmap threshold, heap trimming below it), and
// the next step faults every page in again: half of a CNN epoch was the
// kernel's page-fault path. So ndgc maps large blocks itself and keeps freed
// ones mapped, process-wide, for the next request.
//
// The policy is the GPU's: a CachingAllocator (caching_allocator.hpp) over
// segments that ndgc maps. A request takes the smallest cached block that
// holds it and splits off the rest; a freed block merges with its free
// neighbours. So a pass that frees its widest activations early (a ResNet's
// first layers) serves its later, narrower ones from those pages, which are
// resident already, instead of mapping more: with exact size classes alone,
// resnet18's resident peak was its live set plus every class it had freed.
// Requests up to 1 MiB share 2 MiB segments, those under 10 MiB share
// 20 MiB ones, and larger ones get a segment of their own, rounded to 2 MiB.
// Segments above 2 MiB are aligned to 2 MiB and advised as transparent huge
// pages (one fault and one TLB entry per 2 MiB instead of 512). Blocks are
// 512-byte aligned.
//
// Cached bytes (mapped, not handed out) are bounded by budget()
// (NDGC_HOST_CACHE_BYTES, default a quarter of the machine's memory): past
// it, wholly free segments are unmapped, the largest first (Note [A cache
// budget] in caching_allocator.cpp). Cached blocks are not in use: the
// allocator's limits (NDGC_MAX_BYTES) never count them. Those that were
// touched are resident, so the resident-size limit counts them, and its OOM
// ladder gives them back (release_large_blocks()). Thread-safety: every
// function, from any thread (the allocator's one mutex; a large block's
// kernel work dwarfs it).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ndgc::memory {

inline constexpr std::size_t kLargeBlockBytes = std::size_t(256) << 10;

// A 512-byte aligned block of at least `bytes` (>= kLargeBlockBytes), or
// nullptr when the system refuses the mapping.
void* large_allocate(std::size_t bytes) noexcept;
// Returns a block from large_allocate (the allocator knows its size).
void large_free(void* block) noexcept;

struct LargeCacheStats {
  std::uint64_t cached_bytes = 0;   // mapped, not handed out, kept for reuse
  std::uint64_t mapped_bytes = 0;   // mapped in all: in use plus cached
  std::uint64_t mapped_blocks = 0;  // segments (mappings) held
  std::uint64_t maps = 0;           // segments mapped so far (a steady loop maps none)
};
LargeCacheStats large_cache_stats() noexcept;

// Unmaps every wholly free segment.
void release_large_blocks() noexcept;
// The byte budget of cached blocks; setting it trims down to it. 0 keeps no free segment.
void set_large_cache_budget(std::uint64_t bytes) noexcept;
std::uint64_t large_cache_budget() noexcept;

}  // namespace ndgc::memory
