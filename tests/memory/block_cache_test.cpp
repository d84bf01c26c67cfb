// The per-thread host block cache (src/memory/block_cache.hpp): its byte
// cap (and no cap per class), and Note [Stale classes]: at the cap, classes
// that have served no allocation for a while make room; classes in use never do.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memory/block_cache.hpp"

using namespace ndgc;

namespace {

constexpr std::size_t kBlock = std::size_t(64) << 10;  // a class of its own, exactly

struct Block {
  void* p;
  std::uint8_t size_class;
};

// Allocates `n` blocks of `bytes` from the cache, then returns them all.
void churn(std::size_t bytes, int n) {
  std::vector<Block> blocks;
  for (int i = 0; i < n; ++i) {
    Block b{};
    b.p = memory::cache_allocate(bytes, b.size_class);
    REQUIRE(b.p != nullptr);
    blocks.push_back(b);
  }
  for (const Block& b : blocks) memory::cache_free(b.p, b.size_class);
}

// Fills this thread's (flushed) cache to its cap with 64 KiB blocks: 256 of
// one class.
std::uint64_t fill_to_the_cap() {
  memory::flush_thread_cache();
  const std::uint64_t base = memory::cached_bytes();
  churn(kBlock, int(memory::kThreadCacheBytes / kBlock) + 1);  // one more than fits: dropped
  CHECK(memory::cached_bytes() - base == memory::kThreadCacheBytes);
  return base;
}

}  // namespace

TEST_CASE("block cache: a class in use keeps its blocks at the cap; a new size is dropped") {
  const std::uint64_t base = fill_to_the_cap();
  churn(2 * kBlock, 1);  // right after: the 64 KiB class is in use
  CHECK(memory::cached_bytes() - base == memory::kThreadCacheBytes);
  memory::flush_thread_cache();
  CHECK(memory::cached_bytes() == base);
}

TEST_CASE("block cache: at the cap, a stale class makes room for a size in use") {
  const std::uint64_t base = fill_to_the_cap();
  for (int i = 0; i < 5000; ++i) churn(100, 1);  // another workload: the 64 KiB blocks go stale
  const std::uint64_t small = memory::cached_bytes() - base;
  CHECK(small > 0);
  CHECK(small < 256);
  churn(2 * kBlock, 1);  // cached now, the stale blocks freed
  CHECK(memory::cached_bytes() - base == small + 2 * kBlock);
  // and the new size is served from the cache from then on
  std::uint8_t size_class = 0;
  void* p = memory::cache_allocate(2 * kBlock, size_class);
  CHECK(memory::cached_bytes() - base == small);
  memory::cache_free(p, size_class);
  memory::flush_thread_cache();
  CHECK(memory::cached_bytes() == base);
}
