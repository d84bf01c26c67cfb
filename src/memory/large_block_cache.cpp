// The process-wide cache of large host blocks. See Note [Large host blocks]
// in large_block_cache.hpp.
#include "memory/large_block_cache.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>

#include <sys/mman.h>

#include "memory/size_classes.hpp"
#include "support/assert.hpp"

namespace ndgc::memory {
namespace {

constexpr int kMinShift = 17;  // the first class holds (128 KiB, 144 KiB]: kLargeBlockBytes is above it
constexpr int kMaxShift = 47;  // blocks above 128 TiB are mapped for themselves, never cached
constexpr int kPerPower = 8;
constexpr int kClasses = (kMaxShift - kMinShift) * kPerPower;
constexpr int kUncached = -1;
constexpr std::size_t kPage = 4096;
constexpr std::size_t kHugePage = std::size_t(2) << 20;

using Classes = SizeClasses<kMinShift, kPerPower>;

// The smallest class whose size is at least `bytes`, or kUncached.
int class_of(std::size_t bytes) noexcept {
  return bytes > (std::size_t(1) << kMaxShift) ? kUncached : Classes::of(bytes);
}

std::size_t class_size(int c) noexcept { return Classes::size(c); }

// What a request maps: its class's size, or whole pages beyond the classes.
std::size_t mapped_size(std::size_t bytes, int c) noexcept {
  return c == kUncached ? (bytes + kPage - 1) / kPage * kPage : class_size(c);
}

// A mapping of `size` bytes; 2 MiB-aligned and advised as huge pages from 2 MiB on.
void* map_block(std::size_t size) noexcept {
  const bool huge = size >= kHugePage;
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

// The bookkeeping of a cached block, written into its first bytes.
struct FreeBlock {
  FreeBlock* newer;
  FreeBlock* older;
  std::uint64_t stamp;  // when it was freed: the cache's clock
};

// Per class, a list from the most recently freed block (head) to the least (tail).
struct ClassList {
  FreeBlock* head;
  FreeBlock* tail;
};

struct Cache {
  std::mutex mu;
  ClassList lists[kClasses];  // under mu
  std::uint64_t clock;        // under mu
  std::atomic<std::uint64_t> budget, cached, mapped, blocks, maps;
};
constinit Cache g_cache{};

void push_head(ClassList& l, FreeBlock* b) noexcept {
  b->newer = nullptr;
  b->older = l.head;
  if (l.head) l.head->newer = b;
  else l.tail = b;
  l.head = b;
}

void unlink(ClassList& l, FreeBlock* b) noexcept {
  (b->newer ? b->newer->older : l.head) = b->older;
  (b->older ? b->older->newer : l.tail) = b->newer;
}

void unmap(void* block, std::size_t size) noexcept {
  munmap(block, size);
  g_cache.mapped.fetch_sub(size, std::memory_order_relaxed);
  g_cache.blocks.fetch_sub(1, std::memory_order_relaxed);
}

// Unmaps the least recently freed cached blocks until `room` more bytes fit
// in the budget, or nothing is cached. Called under mu.
void evict_for(std::uint64_t room) noexcept {
  const std::uint64_t budget = g_cache.budget.load(std::memory_order_relaxed);
  while (g_cache.cached.load(std::memory_order_relaxed) + room > budget) {
    int oldest = kUncached;
    for (int k = 0; k < kClasses; ++k) {
      const FreeBlock* t = g_cache.lists[k].tail;
      if (t && (oldest == kUncached || t->stamp < g_cache.lists[oldest].tail->stamp)) oldest = k;
    }
    if (oldest == kUncached) return;
    FreeBlock* victim = g_cache.lists[oldest].tail;
    unlink(g_cache.lists[oldest], victim);
    g_cache.cached.fetch_sub(class_size(oldest), std::memory_order_relaxed);
    unmap(victim, class_size(oldest));
  }
}

}  // namespace

void* large_allocate(std::size_t bytes) noexcept {
  NDGC_ASSERT(bytes >= kLargeBlockBytes, "large_allocate: a small block");
  const int c = class_of(bytes);
  const std::size_t size = mapped_size(bytes, c);
  if (c != kUncached) {
    std::lock_guard lock(g_cache.mu);
    if (FreeBlock* b = g_cache.lists[c].head) {
      unlink(g_cache.lists[c], b);
      g_cache.cached.fetch_sub(size, std::memory_order_relaxed);
      return b;
    }
  }
  // A refused mapping is the OOM ladder's to handle: its empty_cache() rung
  // gives the cached blocks back (release_large_blocks) and retries.
  void* p = map_block(size);
  if (!p) return nullptr;
  g_cache.mapped.fetch_add(size, std::memory_order_relaxed);
  g_cache.blocks.fetch_add(1, std::memory_order_relaxed);
  g_cache.maps.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void large_free(void* block, std::size_t bytes) noexcept {
  const int c = class_of(bytes);
  const std::size_t size = mapped_size(bytes, c);
  if (c != kUncached && size <= g_cache.budget.load(std::memory_order_relaxed)) {
    std::lock_guard lock(g_cache.mu);
    evict_for(size);
    if (g_cache.cached.load(std::memory_order_relaxed) + size <= g_cache.budget.load(std::memory_order_relaxed)) {
      auto* b = static_cast<FreeBlock*>(block);
      b->stamp = ++g_cache.clock;
      push_head(g_cache.lists[c], b);
      g_cache.cached.fetch_add(size, std::memory_order_relaxed);
      return;
    }
  }
  unmap(block, size);
}

LargeCacheStats large_cache_stats() noexcept {
  LargeCacheStats s;
  s.cached_bytes = g_cache.cached.load(std::memory_order_relaxed);
  s.mapped_bytes = g_cache.mapped.load(std::memory_order_relaxed);
  s.mapped_blocks = g_cache.blocks.load(std::memory_order_relaxed);
  s.maps = g_cache.maps.load(std::memory_order_relaxed);
  return s;
}

void release_large_blocks() noexcept {
  std::lock_guard lock(g_cache.mu);
  for (int k = 0; k < kClasses; ++k) {
    ClassList& l = g_cache.lists[k];
    while (FreeBlock* b = l.head) {
      unlink(l, b);
      g_cache.cached.fetch_sub(class_size(k), std::memory_order_relaxed);
      unmap(b, class_size(k));
    }
  }
}

void set_large_cache_budget(std::uint64_t bytes) noexcept {
  std::lock_guard lock(g_cache.mu);
  g_cache.budget.store(bytes, std::memory_order_relaxed);
  evict_for(0);
}

std::uint64_t large_cache_budget() noexcept { return g_cache.budget.load(std::memory_order_relaxed); }

}  // namespace ndgc::memory
