// A per-thread cache of freed host blocks, by size class.
//
// Note [Host block cache]
// glibc serves blocks up to 1 KiB from its per-thread tcache in a few dozen
// instructions, but a 16 KiB block (a 64×64 float32 array) costs ~270
// instructions to malloc and ~400 to free (callgrind): more than a small op's
// kernel. Training loops allocate the same sizes every step, so freed blocks
// of 64 B .. 512 KiB are kept per thread (four size classes per power of
// two: at most 25% slack), up to kThreadCacheBytes per thread, and handed
// out again without touching malloc. The host allocator sends blocks of
// kLargeBlockBytes and more to the large-block cache instead (Note [Large
// host blocks]), so this one sees the small ones only. Each class is a list
// threaded through its free blocks' first bytes: a class holds as many
// blocks as the byte cap allows (an LSTM over 28 steps keeps about 30 of one
// class alive until its backward pass; a count per class sent the rest to
// malloc every step). At the cap, classes that have gone unused for a while
// make room (Note [Stale classes] in block_cache.cpp).
// A block freed on another thread goes to that thread's cache. Cached blocks are not "in use" in the
// allocator's accounting; cached_bytes() reports them. Sanitizer builds
// bypass the cache so that every buffer has exact bounds.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ndgc::memory {

inline constexpr std::uint8_t kUncached = 0xFF;
inline constexpr std::size_t kThreadCacheBytes = 16u << 20;

// A raw malloc block of at least `bytes` and its size class (kUncached for
// sizes the cache does not keep), or nullptr when malloc fails.
void* cache_allocate(std::size_t bytes, std::uint8_t& size_class) noexcept;
// Returns a block from cache_allocate.
void cache_free(void* block, std::uint8_t size_class) noexcept;
// Bytes held in every thread's cache now.
std::uint64_t cached_bytes() noexcept;
// Frees this thread's cached blocks (also done when the thread ends).
void flush_thread_cache() noexcept;

}  // namespace ndgc::memory
