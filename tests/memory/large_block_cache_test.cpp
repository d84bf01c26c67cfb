// The process-wide cache of large host blocks (src/memory/large_block_cache.hpp,
// Note [Large host blocks]): reuse of any larger cached block, split and
// merged back, a repeated pass that maps nothing after the first, the byte
// budget, release, alignment, many threads; and the host allocator's view of
// it (reserved against in use, empty_cache, limits).
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include <ndgc/error.hpp>
#include <ndgc/memory.hpp>

#include "memory/allocator.hpp"
#include "memory/large_block_cache.hpp"

using namespace ndgc;

namespace {

constexpr std::size_t kMiB = std::size_t(1) << 20;

// Sets the budget for one test case, emptied first; restores it after.
struct Budget {
  std::uint64_t saved = memory::large_cache_budget();
  explicit Budget(std::uint64_t bytes) {
    memory::release_large_blocks();
    memory::set_large_cache_budget(bytes);
  }
  ~Budget() {
    memory::release_large_blocks();
    memory::set_large_cache_budget(saved);
  }
};

}  // namespace

TEST_CASE("large blocks: a freed block serves any smaller request, split and merged back, with no new mapping") {
  Budget budget(256 * kMiB);
  const std::uint64_t mapped = memory::large_cache_stats().mapped_bytes;
  void* a = memory::large_allocate(48 * kMiB);
  REQUIRE(a != nullptr);
  std::memset(a, 1, 48 * kMiB);
  memory::large_free(a);
  CHECK(memory::large_cache_stats().cached_bytes == 48 * kMiB);
  const std::uint64_t maps = memory::large_cache_stats().maps;
  // Narrower requests after a wide one (a ResNet's later layers) take its pages.
  void* b = memory::large_allocate(12 * kMiB);
  void* c = memory::large_allocate(30 * kMiB);
  CHECK(b == a);
  CHECK(static_cast<char*>(c) == static_cast<char*>(a) + 12 * kMiB);
  CHECK(memory::large_cache_stats().maps == maps);
  CHECK(memory::large_cache_stats().cached_bytes == 6 * kMiB);
  memory::large_free(b);
  memory::large_free(c);
  // Merged again: the wide request of the next pass finds its block.
  void* d = memory::large_allocate(48 * kMiB);
  CHECK(d == a);
  CHECK(memory::large_cache_stats().maps == maps);
  CHECK(memory::large_cache_stats().mapped_bytes == mapped + 48 * kMiB);
  memory::large_free(d);
}

// A pass shaped like a convolutional network's forward: two wide
// activations, then narrower ones while the wide ones die. The first pass
// maps only its live peak; the next ones map nothing.
TEST_CASE("large blocks: a repeated pass maps its live peak once, then nothing") {
  Budget budget(256 * kMiB);
  const std::uint64_t mapped = memory::large_cache_stats().mapped_bytes;
  std::uint64_t maps_after_first = 0;
  for (int pass = 0; pass < 4; ++pass) {
    CAPTURE(pass);
    void* wide = memory::large_allocate(48 * kMiB);
    void* wide2 = memory::large_allocate(48 * kMiB);
    memory::large_free(wide);
    void* x = memory::large_allocate(12 * kMiB);
    memory::large_free(wide2);
    void* y = memory::large_allocate(12 * kMiB);
    void* z = memory::large_allocate(12 * kMiB);
    memory::large_free(x);
    void* u = memory::large_allocate(6 * kMiB);
    void* v = memory::large_allocate(3 * kMiB);
    for (void* p : {y, z, u, v}) memory::large_free(p);
    if (pass == 0) maps_after_first = memory::large_cache_stats().maps;
    CHECK(memory::large_cache_stats().maps == maps_after_first);
    CHECK(memory::large_cache_stats().mapped_bytes == mapped + 96 * kMiB);  // size classes alone mapped 141 MiB
  }
}

TEST_CASE("large blocks: 512-byte aligned, and a large segment's first block on 2 MiB") {
  Budget budget(64 * kMiB);
  for (std::size_t bytes : {memory::kLargeBlockBytes, 300 * std::size_t(1024), 2 * kMiB, 9 * kMiB + 12345}) {
    CAPTURE(bytes);
    void* p = memory::large_allocate(bytes);
    REQUIRE(p != nullptr);
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    CHECK(address % 512 == 0);
    if (bytes > kMiB) CHECK(address % (2 * kMiB) == 0);  // alone in a free 20 MiB segment: at its start
    std::memset(p, 0x5a, bytes);  // all of it is writable
    memory::large_free(p);
  }
}

TEST_CASE("large blocks: the budget bounds the free segments kept; the largest go first") {
  Budget budget(30 * kMiB);
  void* first = memory::large_allocate(12 * kMiB);  // a segment each: 10 MiB and more
  void* second = memory::large_allocate(12 * kMiB);
  void* third = memory::large_allocate(16 * kMiB);
  const std::uint64_t mapped = memory::large_cache_stats().mapped_bytes;
  memory::large_free(first);
  memory::large_free(second);
  CHECK(memory::large_cache_stats().cached_bytes == 24 * kMiB);
  memory::large_free(third);  // 40 MiB would not fit: the 16 MiB segment is unmapped
  CHECK(memory::large_cache_stats().cached_bytes == 24 * kMiB);
  CHECK(memory::large_cache_stats().mapped_bytes == mapped - 16 * kMiB);
  // Lowering the budget trims down to it.
  memory::set_large_cache_budget(13 * kMiB);
  CHECK(memory::large_cache_stats().cached_bytes == 12 * kMiB);
  CHECK(memory::large_cache_budget() == 13 * kMiB);
  // Only a wholly free segment can go: the free rest of one in use stays.
  memory::set_large_cache_budget(0);
  void* a = memory::large_allocate(2 * kMiB);  // two blocks of one 20 MiB segment
  void* b = memory::large_allocate(2 * kMiB);
  memory::large_free(a);
  CHECK(memory::large_cache_stats().cached_bytes == 18 * kMiB);
  memory::large_free(b);
  CHECK(memory::large_cache_stats().cached_bytes == 0);
}

TEST_CASE("large blocks: a budget of 0 keeps nothing; release unmaps every free segment") {
  {
    Budget budget(0);
    const std::uint64_t blocks = memory::large_cache_stats().mapped_blocks;
    void* p = memory::large_allocate(kMiB);
    CHECK(memory::large_cache_stats().mapped_blocks == blocks + 1);
    memory::large_free(p);
    CHECK(memory::large_cache_stats().cached_bytes == 0);
    CHECK(memory::large_cache_stats().mapped_blocks == blocks);
  }
  Budget budget(64 * kMiB);
  std::vector<void*> blocks;
  for (int i = 0; i < 6; ++i) blocks.push_back(memory::large_allocate(std::size_t(i + 1) * kMiB));
  for (int i = 0; i < 6; ++i) memory::large_free(blocks[std::size_t(i)]);
  CHECK(memory::large_cache_stats().cached_bytes >= 21 * kMiB);
  memory::release_large_blocks();
  CHECK(memory::large_cache_stats().cached_bytes == 0);
}

TEST_CASE("large blocks: many threads allocating and freeing keep the totals exact") {
  Budget budget(32 * kMiB);
  const memory::LargeCacheStats before = memory::large_cache_stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        const std::size_t bytes = (std::size_t(1 + (i + t) % 5)) * kMiB / 2;
        auto* p = static_cast<unsigned char*>(memory::large_allocate(bytes));
        REQUIRE(p != nullptr);
        p[0] = p[bytes - 1] = static_cast<unsigned char>(i);  // the block is this thread's alone
        CHECK(p[0] == static_cast<unsigned char>(i));
        memory::large_free(p);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const memory::LargeCacheStats after = memory::large_cache_stats();
  CHECK(after.cached_bytes <= 32 * kMiB);
  CHECK(after.mapped_bytes - before.mapped_bytes == after.cached_bytes - before.cached_bytes);
}

TEST_CASE("host memory: reserved is in use plus cached, empty_cache gives large blocks back, limits count in use") {
  memory::DeviceAllocator& host = memory::host_allocator();
  const std::uint64_t budget = memory::large_cache_budget();
  memory::set_large_cache_budget(256 * kMiB);
  void* p = host.allocate(8 * kMiB);
  void* p2 = host.allocate(8 * kMiB);
  std::memset(p, 1, 8 * kMiB);
  host.deallocate(p, 8 * kMiB);
  host.deallocate(p2, 8 * kMiB);
  memory::Stats s = memory::stats(Device::cpu());
  CHECK(s.reserved_bytes == s.current_bytes + s.cached_bytes);
  const bool exact = s.cached_bytes < 16 * kMiB;  // sanitizer and Valgrind builds cache nothing
  if (!exact) {
    // A limit below in use plus cached (16 MiB) still admits a request that fits in use.
    const std::uint64_t old_limit = host.limit();
    host.set_limit(s.current_bytes + 9 * kMiB);
    void* q = host.allocate(8 * kMiB);
    CHECK(memory::stats(Device::cpu()).alloc_retries == s.alloc_retries);  // no OOM ladder needed
    host.deallocate(q, 8 * kMiB);
    host.set_limit(old_limit);
  }
  memory::empty_cache(Device::cpu());
  CHECK(memory::large_cache_stats().cached_bytes == 0);
  memory::set_large_cache_budget(budget);
}

// The README's promise: cached blocks are resident, so the resident-size
// limit counts them, and its OOM ladder gives them back (empty_cache) before
// an allocation fails.
TEST_CASE("host memory: over the resident-size limit, the OOM ladder gives the cached large blocks back and succeeds") {
  memory::DeviceAllocator& host = memory::host_allocator();
  const std::uint64_t budget = memory::large_cache_budget();
  memory::set_large_cache_budget(256 * kMiB);
  void* p = host.allocate(64 * kMiB);
  std::memset(p, 1, 64 * kMiB);
  host.deallocate(p, 64 * kMiB);
  if (memory::large_cache_stats().cached_bytes < 64 * kMiB) {  // sanitizer and Valgrind builds cache nothing
    memory::set_large_cache_budget(budget);
    return;
  }
  const std::uint64_t retries = host.stats().alloc_retries;
  memory::set_physical_limit(memory::resident_bytes() + 16 * kMiB);  // the cached 64 MiB is inside it
  void* q = nullptr;
  CHECK_NOTHROW(q = host.allocate(32 * kMiB));  // over the limit until the cache is given back
  memory::set_physical_limit(0);
  CHECK(host.stats().alloc_retries == retries + 1);
  CHECK(memory::large_cache_stats().cached_bytes == 0);
  host.deallocate(q, 32 * kMiB);
  memory::set_large_cache_budget(budget);
}
