// Host blocks of kLargeBlockBytes and more: mapped by ndgc, kept mapped for
// reuse under a byte budget.
//
// Note [Large host blocks]
// A training step frees and allocates the same large buffers every step
// (activations, columns, their gradients). glibc gives such blocks back to
// the kernel (munmap above its mmap threshold, heap trimming below it), and
// the next step faults every page in again: half of a CNN epoch was the
// kernel's page-fault path. So ndgc maps large blocks itself and keeps freed
// ones mapped, process-wide, for the next request of the same size class
// (eight classes per power of two: at most 12.5 % slack). The cache holds at
// most budget() bytes (NDGC_HOST_CACHE_BYTES, default a quarter of the
// machine's memory); past it the least recently freed blocks are unmapped.
// Blocks of 2 MiB and more are aligned to 2 MiB and advised as transparent
// huge pages (one fault and one TLB entry per 2 MiB instead of 512).
//
// Cached blocks are not in use: the allocator's limits (NDGC_MAX_BYTES)
// never count them. They are resident, so the resident-size limit does, and
// its OOM ladder gives them back (release()). The bookkeeping of a cached
// block lives in its own first bytes, so the cache never allocates.
// Thread-safety: every function, from any thread (one mutex; a large block's
// kernel work dwarfs it).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ndgc::memory {

inline constexpr std::size_t kLargeBlockBytes = std::size_t(256) << 10;

// A page-aligned block of at least `bytes` (>= kLargeBlockBytes), or
// nullptr when the system refuses the mapping.
void* large_allocate(std::size_t bytes) noexcept;
// Returns a block from large_allocate(bytes), with the same `bytes`.
void large_free(void* block, std::size_t bytes) noexcept;

struct LargeCacheStats {
  std::uint64_t cached_bytes = 0;   // mapped, free, kept for reuse
  std::uint64_t mapped_bytes = 0;   // mapped in all: in use plus cached
  std::uint64_t mapped_blocks = 0;  // mappings held
  std::uint64_t maps = 0;           // mappings made so far (a steady loop makes none)
};
LargeCacheStats large_cache_stats() noexcept;

// Unmaps every cached block.
void release_large_blocks() noexcept;
// The byte budget of cached blocks; setting it evicts down to it. 0 caches nothing.
void set_large_cache_budget(std::uint64_t bytes) noexcept;
std::uint64_t large_cache_budget() noexcept;

}  // namespace ndgc::memory
