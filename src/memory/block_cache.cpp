// The per-thread host block cache. See Note [Host block cache] in block_cache.hpp.
//
// The cache itself is a trivially destructible thread_local (usable even
// while the thread's other thread_locals are being destroyed); a separate
// thread_local object flushes it when the thread ends and marks it dead, so a
// block freed after that, by a late destructor, goes straight to free().
#include "memory/block_cache.hpp"

#include <atomic>
#include <cstdlib>

#include "memory/size_classes.hpp"
#include "support/sharded_counters.hpp"

namespace ndgc::memory {
namespace {

constexpr int kMinShift = 6;   // classes start above 64 B (Note [Host block cache])
constexpr int kMaxShift = 19;  // and end at 512 KiB (the host allocator's small blocks, with their header)
constexpr int kClasses = (kMaxShift - kMinShift) * 4;
// A class that has served no allocation over this many of the thread's
// cached-size allocations (a few training steps) is stale (Note [Stale classes]).
constexpr std::uint32_t kStaleAfter = 4096;

using Classes = SizeClasses<kMinShift, 4>;

std::size_t class_size(int c) noexcept { return Classes::size(c); }

// The smallest class whose size is at least `bytes`, or kUncached.
std::uint8_t class_of(std::size_t bytes) noexcept {
  if (bytes <= (std::size_t(1) << kMinShift) || bytes > (std::size_t(1) << kMaxShift)) return kUncached;
  return std::uint8_t(Classes::of(bytes));
}

// A cached block's first bytes: the next free block of its class.
struct FreeBlock {
  FreeBlock* next;
};

struct ThreadCache {
  FreeBlock* head[kClasses];
  std::uint32_t last_used[kClasses];  // `clock` when the class last served or missed an allocation
  std::uint32_t clock;                // counts this thread's allocations of cached sizes (wraps)
  std::size_t bytes;
  bool dead;
};
thread_local ThreadCache t_cache;  // zero-initialised
// Bytes put into and taken out of caches; their difference is what is cached.
enum { kPutBytes, kTakenBytes };
struct CachedTag;
constinit support::ShardedCounters<2, CachedTag> g_cached;

struct Flusher {
  bool armed = false;
  ~Flusher() {
    flush_thread_cache();
    t_cache.dead = true;
  }
};
thread_local Flusher t_flusher;

void free_class(ThreadCache& c, int k) noexcept {
  std::size_t size = 0;
  while (FreeBlock* b = c.head[k]) {
    c.head[k] = b->next;
    std::free(b);
    size += class_size(k);
  }
  c.bytes -= size;
  if (size) g_cached.add(kTakenBytes, size);
}

// Note [Stale classes]
// The byte cap alone would let a thread's cache fill with the sizes of a
// workload that has ended (one model trained, then another; a warm-up pass
// of other shapes) and then send every block of the current one to malloc,
// for good: freed blocks were dropped whenever the cap was reached. So a free
// that finds the cache full first frees the blocks of stale classes, those
// that served no allocation over the last kStaleAfter; a class in use is
// never evicted, so two workloads that together exceed the cap do not
// thrash. Returns whether `size` more bytes now fit.
bool make_room(ThreadCache& c, std::size_t size) noexcept {
  for (int k = 0; k < kClasses && c.bytes + size > kThreadCacheBytes; ++k)
    if (c.head[k] && c.clock - c.last_used[k] > kStaleAfter) free_class(c, k);
  return c.bytes + size <= kThreadCacheBytes;
}

}  // namespace

void* cache_allocate(std::size_t bytes, std::uint8_t& size_class) noexcept {
  size_class = class_of(bytes);
  if (size_class == kUncached) return std::malloc(bytes);
  ThreadCache& c = t_cache;
  c.last_used[size_class] = ++c.clock;
  if (FreeBlock* b = c.head[size_class]) {
    std::size_t size = class_size(size_class);
    c.head[size_class] = b->next;
    c.bytes -= size;
    g_cached.add(kTakenBytes, size);
    return b;
  }
  void* block = std::malloc(class_size(size_class));
  if (!block && c.bytes > 0) {  // memory is tight: give back what we hold and try again
    flush_thread_cache();
    block = std::malloc(class_size(size_class));
  }
  return block;
}

void cache_free(void* block, std::uint8_t size_class) noexcept {
  ThreadCache& c = t_cache;
  if (size_class == kUncached || c.dead) {
    std::free(block);
    return;
  }
  std::size_t size = class_size(size_class);
  if (c.bytes + size > kThreadCacheBytes && !make_room(c, size)) {
    std::free(block);
    return;
  }
  t_flusher.armed = true;  // constructs the flusher on this thread's first cached block
  auto* b = static_cast<FreeBlock*>(block);
  b->next = c.head[size_class];
  c.head[size_class] = b;
  c.bytes += size;
  g_cached.add(kPutBytes, size);
}

std::uint64_t cached_bytes() noexcept {
  // Taken is read second: a block put and taken between the two reads makes
  // the difference momentarily negative, which reads as zero.
  std::uint64_t put = g_cached.sum(kPutBytes), taken = g_cached.sum(kTakenBytes);
  return put > taken ? put - taken : 0;
}

void flush_thread_cache() noexcept {
  ThreadCache& c = t_cache;
  for (int k = 0; k < kClasses; ++k) free_class(c, k);
}

}  // namespace ndgc::memory
