// The caching allocator's policy over a host-backed fake device: rounding,
// pools, splitting, max_split_size, merging, best fit, stream-ordered reuse,
// empty_cache, the retry on a full device and exact statistics.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>

#include "memory/caching_allocator.hpp"
#include "memory/host_segment_source.hpp"
#include "malloc_counter.hpp"

using namespace ndgc::memory;

namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;
using Info = CachingAllocator::BlockInfo;

std::ptrdiff_t distance(const void* a, const void* b) {
  return static_cast<const char*>(b) - static_cast<const char*>(a);
}

// The one segment's blocks as (size, state) pairs.
std::vector<std::pair<std::size_t, Info::State>> layout(const CachingAllocator& cache) {
  auto segs = cache.snapshot();
  REQUIRE(segs.size() == 1);
  std::vector<std::pair<std::size_t, Info::State>> out;
  for (const Info& b : segs[0].blocks) out.emplace_back(b.size, b.state);
  return out;
}

// A wholly free segment: one block, free.
std::uint64_t free_segments_in(const CachingAllocator& cache) {
  std::uint64_t n = 0;
  for (const auto& seg : cache.snapshot()) n += seg.blocks.size() == 1 && seg.blocks[0].state == Info::kFree;
  return n;
}

}  // namespace

TEST_CASE("requests are rounded to 512 bytes and pick their pool and segment size") {
  CHECK(CachingAllocator::round_size(1) == 512);
  CHECK(CachingAllocator::round_size(512) == 512);
  CHECK(CachingAllocator::round_size(513) == 1024);
  CHECK(CachingAllocator::round_size(3 * MiB + 1) == 3 * MiB + 512);
  CHECK(CachingAllocator::is_small(1 * MiB));
  CHECK_FALSE(CachingAllocator::is_small(1 * MiB + 512));
  CHECK(CachingAllocator::segment_size(512) == 2 * MiB);
  CHECK(CachingAllocator::segment_size(1 * MiB) == 2 * MiB);
  CHECK(CachingAllocator::segment_size(1 * MiB + 512) == 20 * MiB);
  CHECK(CachingAllocator::segment_size(10 * MiB - 512) == 20 * MiB);
  CHECK(CachingAllocator::segment_size(10 * MiB) == 10 * MiB);
  CHECK(CachingAllocator::segment_size(10 * MiB + 512) == 12 * MiB);

  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src);
  CHECK(cache.allocate(0, 0) == nullptr);
  void* tiny = cache.allocate(1, 0);
  void* small = cache.allocate(1 * MiB, 0);
  void* large = cache.allocate(1 * MiB + 1, 0);
  void* huge = cache.allocate(21 * MiB, 0);
  CHECK(cache.block_size(tiny) == 512);
  CHECK(cache.block_size(small) == 1 * MiB);
  CHECK(cache.block_size(large) == 1 * MiB + 512);
  CHECK(cache.block_size(huge) == 22 * MiB);  // its own segment, whole: a 1 MiB rest is not split off
  auto segs = cache.snapshot();
  REQUIRE(segs.size() == 3);
  std::vector<std::pair<std::size_t, bool>> kinds;
  for (auto& s : segs) kinds.emplace_back(s.size, s.small);
  std::sort(kinds.begin(), kinds.end());
  CHECK(kinds == std::vector<std::pair<std::size_t, bool>>{{2 * MiB, true}, {20 * MiB, false}, {22 * MiB, false}});
  CHECK(distance(tiny, small) == 512);  // the small pool's two requests share one segment
  CHECK(src.calls().allocate == 3);
  for (void* p : {tiny, small, large, huge}) CHECK(cache.free(p));
}

TEST_CASE("small blocks split down to 512 bytes, large ones only when more than 1 MiB is left") {
  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src);
  SUBCASE("small pool") {
    void* a = cache.allocate(1 * MiB, 0);
    void* b = cache.allocate(1 * MiB - 512, 0);  // leaves exactly 512 B: split off
    CHECK(layout(cache) == std::vector<std::pair<std::size_t, Info::State>>{
                               {1 * MiB, Info::kAllocated}, {1 * MiB - 512, Info::kAllocated}, {512, Info::kFree}});
    void* c = cache.allocate(100, 0);
    CHECK(distance(a, c) == std::ptrdiff_t(2 * MiB - 512));
    CHECK(cache.stats().splits == 2);
    CHECK(cache.stats().segments == 1);
    for (void* p : {a, b, c}) cache.free(p);
  }
  SUBCASE("large pool") {
    void* a = cache.allocate(19 * MiB, 0);  // 1 MiB left: not split
    CHECK(cache.block_size(a) == 20 * MiB);
    void* b = cache.allocate(19 * MiB - 512, 0);  // a new segment; 1 MiB + 512 left: split
    CHECK(cache.block_size(b) == 19 * MiB - 512);
    CHECK(cache.stats().splits == 1);
    CHECK(cache.stats().segments == 2);
    cache.free(a);
    cache.free(b);
  }
}

TEST_CASE("max_split_size: oversize blocks are never split and serve only oversize requests within a bound") {
  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src, CachingConfig{.max_split_size = 4 * MiB, .max_oversize_waste = 6 * MiB});
  void* big = cache.allocate(12 * MiB, 0);
  REQUIRE(cache.block_size(big) == 12 * MiB);
  cache.free(big);
  const auto segments = cache.stats().segments;

  // A small-for-the-pool request does not carve the cached 12 MiB block.
  void* medium = cache.allocate(2 * MiB, 0);
  CHECK(medium != big);
  CHECK(cache.stats().segments == segments + 1);
  CHECK(cache.block_size(medium) == 2 * MiB);  // a request under max_split_size splits its new segment

  // An oversize request within the waste bound takes the cached block whole.
  void* over = cache.allocate(8 * MiB, 0);
  CHECK(over == big);
  CHECK(cache.block_size(over) == 12 * MiB);
  cache.free(over);

  // One that would waste more than the bound gets a segment of its own.
  void* wasteful = cache.allocate(5 * MiB, 0);
  CHECK(wasteful != big);
  CHECK(cache.block_size(wasteful) >= 5 * MiB);
  CHECK(cache.stats().splits == 1);  // only the 2 MiB block of the first large segment was split
  cache.free(medium);
  cache.free(wasteful);
}

TEST_CASE("freed neighbours merge, in every free order, to one free block per segment") {
  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src);
  std::array<int, 4> order{0, 1, 2, 3};
  int permutations = 0;
  do {
    std::array<void*, 4> p;
    for (void*& q : p) q = cache.allocate(64 * KiB, 0);
    for (int i = 1; i < 4; ++i) REQUIRE(distance(p[0], p[std::size_t(i)]) == i * std::ptrdiff_t(64 * KiB));
    for (int k : order) CHECK(cache.free(p[std::size_t(k)]));
    CHECK(layout(cache) == std::vector<std::pair<std::size_t, Info::State>>{{2 * MiB, Info::kFree}});
    ++permutations;
  } while (std::next_permutation(order.begin(), order.end()));
  CHECK(permutations == 24);
  CachingStats s = cache.stats();
  CHECK(s.segments == 1);
  CHECK(s.splits == 24 * 4);  // each allocation split the segment's free tail
  CHECK(s.merges == 24 * 4);  // and each free merged once: a block is gone per merge
  CHECK(s.allocated_bytes == 0);
}

TEST_CASE("a freed block merges with both neighbours at once") {
  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src);
  void* a = cache.allocate(64 * KiB, 0);
  void* b = cache.allocate(64 * KiB, 0);
  void* c = cache.allocate(64 * KiB, 0);
  cache.free(a);
  cache.free(c);  // merges with the free tail
  CHECK(layout(cache) == std::vector<std::pair<std::size_t, Info::State>>{
                             {64 * KiB, Info::kFree}, {64 * KiB, Info::kAllocated}, {2 * MiB - 128 * KiB, Info::kFree}});
  const auto merges = cache.stats().merges;
  cache.free(b);
  CHECK(cache.stats().merges == merges + 2);
  CHECK(layout(cache) == std::vector<std::pair<std::size_t, Info::State>>{{2 * MiB, Info::kFree}});
}

TEST_CASE("best fit: the smallest free block that holds the request") {
  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src);
  void* a = cache.allocate(256 * KiB, 0);
  void* s1 = cache.allocate(64 * KiB, 0);
  void* b = cache.allocate(128 * KiB, 0);
  void* s2 = cache.allocate(64 * KiB, 0);
  void* c = cache.allocate(192 * KiB, 0);
  void* s3 = cache.allocate(64 * KiB, 0);
  cache.free(a);
  cache.free(b);
  cache.free(c);
  CHECK(cache.allocate(100 * KiB, 0) == b);
  CHECK(cache.allocate(150 * KiB, 0) == c);
  CHECK(cache.allocate(200 * KiB, 0) == a);
  CHECK(cache.stats().segments == 1);
}

TEST_CASE("stream-ordered reuse") {
  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src);
  constexpr StreamId s1 = 1, s2 = 2;

  SUBCASE("a block freed on its own stream is reused at once, never by another stream") {
    void* p = cache.allocate(4096, s1);
    cache.free(p);
    void* other = cache.allocate(4096, s2);
    CHECK(other != p);
    CHECK(cache.stats().segments == 2);  // stream 2 got a segment of its own
    CHECK(cache.allocate(4096, s1) == p);
    CHECK(src.calls().record == 0);
  }
  SUBCASE("a block used on another stream waits for that stream's event") {
    void* p = cache.allocate(4096, s1);
    CHECK(cache.record_stream(p, s2));
    CHECK(cache.record_stream(p, s2));  // recorded once
    CHECK(cache.record_stream(p, s1));  // its own stream: nothing to wait for
    CHECK(cache.free(p));
    CHECK(src.calls().record == 1);
    CHECK(cache.stats().pending_blocks == 1);
    CHECK(cache.stats().active_blocks == 1);  // pending blocks stay active
    CHECK(cache.stats().allocated_bytes == 0);

    void* q = cache.allocate(4096, s1);
    CHECK(q != p);  // still pending: stream 2 may be reading it
    src.complete_events(s1);  // the wrong stream: no effect
    void* r = cache.allocate(4096, s1);
    CHECK(r != p);
    src.complete_events(s2);
    void* again = cache.allocate(4096, s1);  // the event is queried here
    CHECK(again == p);
    CHECK(cache.stats().pending_blocks == 0);
    CHECK(src.live_events() == 0);  // queried and destroyed
    for (void* x : {q, r, again}) cache.free(x);
  }
  SUBCASE("events on several streams: the block waits for all of them") {
    void* p = cache.allocate(4096, s1);
    void* guard = cache.allocate(4096, s1);  // keeps p from merging with the tail
    cache.record_stream(p, s2);
    cache.record_stream(p, 3);
    cache.free(p);
    src.complete_events(s2);
    void* q = cache.allocate(4096, s1);
    CHECK(q != p);
    src.complete_events(3);
    CHECK(cache.allocate(4096, s1) == p);
    cache.free(q);
    cache.free(guard);
  }
  SUBCASE("pointers not handed out are refused") {
    int x;
    CHECK_FALSE(cache.free(&x));
    CHECK_FALSE(cache.record_stream(&x, s2));
    void* p = cache.allocate(4096, s1);
    CHECK(cache.free(p));
    CHECK_FALSE(cache.free(p));  // a double free
    CHECK(cache.stats().allocated_bytes == 0);
  }
}

TEST_CASE("empty_cache gives back fully free segments only, after waiting for pending frees") {
  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src);
  void* live = cache.allocate(4096, 0);      // keeps its small segment
  void* freed = cache.allocate(4096, 0);     // same segment, freed below
  void* large = cache.allocate(4 * MiB, 0);  // a 20 MiB segment, freed below
  void* other = cache.allocate(4096, 7);     // stream 7's small segment, pending below
  cache.free(freed);
  cache.free(large);
  cache.record_stream(other, 8);
  cache.free(other);
  CHECK(cache.stats().segments == 3);
  const auto syncs = src.calls().synchronize;

  CHECK(cache.empty_cache() == 20 * MiB + 2 * MiB);
  CHECK(src.calls().synchronize == syncs + 1);
  CachingStats s = cache.stats();
  CHECK(s.segments == 1);
  CHECK(s.reserved_bytes == 2 * MiB);
  CHECK(s.pending_blocks == 0);
  CHECK(s.segment_frees == 2);
  CHECK(src.used_bytes() == 2 * MiB);
  CHECK(src.live_events() == 0);
  CHECK(cache.block_size(live) == 4096);
  cache.free(live);
  CHECK(cache.empty_cache() == 2 * MiB);
  CHECK(src.used_bytes() == 0);
}

TEST_CASE("a cache budget: past it, wholly free segments go back, the largest first; none by default") {
  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src);
  CHECK(cache.max_cached_bytes() == std::numeric_limits<std::size_t>::max());
  void* a = cache.allocate(12 * MiB, 0);  // a segment each
  void* b = cache.allocate(16 * MiB, 0);
  void* c = cache.allocate(4 * MiB, 0);  // two blocks of one 20 MiB segment
  void* d = cache.allocate(4 * MiB, 0);
  for (void* p : {a, b, c}) cache.free(p);
  CHECK(cache.stats().cached_bytes() == 12 * MiB + 16 * MiB + 16 * MiB);  // no budget: all kept
  cache.set_max_cached_bytes(20 * MiB);
  CHECK(cache.max_cached_bytes() == 20 * MiB);
  // 16 MiB went first, then 12 MiB; the 20 MiB segment is still in use (d).
  CHECK(cache.stats().segment_frees == 2);
  CHECK(cache.stats().cached_bytes() == 16 * MiB);
  CHECK(src.used_bytes() == 20 * MiB);
  cache.free(d);  // the segment is wholly free now, and over the budget
  CHECK(cache.stats().cached_bytes() == 20 * MiB);
  cache.set_max_cached_bytes(0);
  CHECK(cache.stats().segments == 0);
  CHECK(src.used_bytes() == 0);
}

TEST_CASE("free_segments counts the wholly free segments through splits, merges, budgets and empty_cache") {
  HostSegmentSource src(512 * MiB);
  CachingAllocator cache(src);
  std::vector<void*> held;
  std::uint64_t state = 12345;
  auto next = [&state] { return (state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  const std::size_t sizes[] = {512, 40 * KiB, 1 * MiB, 3 * MiB, 12 * MiB};
  for (int step = 0; step < 3000; ++step) {
    const auto r = next() % 100;
    if (r < 55 || held.empty()) {
      if (void* p = cache.allocate(sizes[next() % 5], StreamId(next() % 2))) held.push_back(p);
    } else if (r < 97) {
      const std::size_t i = next() % held.size();
      cache.free(held[i]);
      held.erase(held.begin() + std::ptrdiff_t(i));
    } else if (r < 99) {
      cache.set_max_cached_bytes(next() % 2 ? 24 * MiB : std::numeric_limits<std::size_t>::max());
    } else {
      cache.empty_cache();
    }
    REQUIRE(cache.stats().free_segments == free_segments_in(cache));
  }
  for (void* p : held) cache.free(p);
  CHECK(cache.stats().free_segments == cache.stats().segments);
  cache.set_max_cached_bytes(0);
  CHECK(cache.stats().free_segments == 0);
  CHECK(cache.stats().segments == 0);
}

TEST_CASE("over the budget in pieces of used segments, a free gives nothing back and keeps the pieces") {
  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src);
  cache.set_max_cached_bytes(0);
  std::vector<void*> kept, freed;
  for (int i = 0; i < 8; ++i) {  // a 2 MiB segment each, in two halves: one kept, the other freed
    kept.push_back(cache.allocate(1 * MiB, 0));
    freed.push_back(cache.allocate(1 * MiB, 0));
  }
  for (void* p : freed) cache.free(p);
  CachingStats s = cache.stats();
  CHECK(s.segments == 8);
  CHECK(s.cached_bytes() == 8 * MiB);  // over the budget, and nothing can go
  CHECK(s.free_segments == 0);
  CHECK(s.segment_frees == 0);
  cache.free(kept.back());  // its segment is whole now: it goes at once
  s = cache.stats();
  CHECK(s.segment_frees == 1);
  CHECK(s.free_segments == 0);
  CHECK(s.cached_bytes() == 7 * MiB);
  kept.pop_back();
  for (void* p : kept) cache.free(p);
  CHECK(cache.stats().segments == 0);
}

TEST_CASE("a cache hit calls no function of the source") {
  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src);
  const std::size_t sizes[] = {100, 4096, 300 * KiB, 1 * MiB, 3 * MiB, 12 * MiB};
  for (std::size_t n : sizes) cache.free(cache.allocate(n, 0));
  const auto before = src.calls().total();
  const auto hits = cache.stats().cache_hits;
  for (int round = 0; round < 100; ++round) {
    std::vector<void*> held;
    for (std::size_t n : sizes) held.push_back(cache.allocate(n, 0));
    for (void* p : held) REQUIRE(p != nullptr);
    for (void* p : held) cache.free(p);
  }
  CHECK(src.calls().total() == before);
  CHECK(cache.stats().cache_hits - hits == 100 * 6);
}

// Note [No heap on a hit]: split, merge and the allocated set take nothing
// from the heap, also once the set has grown past its first buckets.
TEST_CASE("a cache hit and its free make no heap allocation" * doctest::skip(!ndgc::test::kCountsMalloc)) {
  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src);
  std::vector<void*> held(3000);  // 3000 blocks of 4 KiB in 6 small segments; more than the first buckets
  for (int round = 0; round < 2; ++round) {  // the first round warms: segments, Blocks, buckets
    std::size_t failed = 0;  // counted, not CHECKed, inside the measured span
    const std::uint64_t before = ndgc::test::heap_allocations();
    for (void*& p : held) failed += (p = cache.allocate(4 * KiB, 0)) == nullptr;
    for (std::size_t i = 0; i < held.size(); i += 2) failed += !cache.free(held[i]);  // every other: no merges yet
    for (std::size_t i = 1; i < held.size(); i += 2) failed += !cache.free(held[i]);  // each merges both sides
    const std::uint64_t allocations = ndgc::test::heap_allocations() - before;
    CHECK(failed == 0);
    if (round == 1) CHECK(allocations == 0);
  }
  for (void* p : held) CHECK(cache.block_size(p) == 0);
  CHECK(cache.stats().allocated_bytes == 0);
  CHECK(cache.stats().segments == 6);
}

// Note [Private pools]
TEST_CASE("a private pool: its own segments, its blocks for its requests alone, given to the stream on release") {
  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src);
  constexpr StreamId kPool = (StreamId(1) << 63) | 1;
  void* ordinary = cache.allocate(4 * KiB, 0);
  cache.open_private_pool(kPool);
  void* captured = cache.allocate(4 * KiB, 0);  // the stream asked for is overridden by the pool
  void* scratch = cache.allocate(64 * KiB, 0);
  CHECK(cache.stats().segments == 2);  // the pool's own segment
  CHECK(cache.free(scratch));
  void* again = cache.allocate(64 * KiB, 0);  // the pool's freed block serves the pool's next request
  CHECK(again == scratch);
  CHECK(cache.free(again));
  cache.close_private_pool();
  CHECK(cache.free(captured));  // back to the pool, not to stream 0
  // Stream 0 never gets the pool's blocks: its requests come from its own segment (filled here to
  // less than 1 MiB free).
  std::vector<void*> held;
  for (int i = 0; i < 16; ++i) {
    held.push_back(cache.allocate(64 * KiB, 0));
    const auto* p = static_cast<const char*>(held.back());
    const auto* pool_start = static_cast<const char*>(captured);
    CHECK_FALSE((p >= pool_start && p < pool_start + kSmallSegment));
  }
  CHECK(cache.stats().segments == 2);
  cache.release_private_pool(kPool, 0);
  void* reused = cache.allocate(1 * MiB, 0);  // only the released segment has this much free
  CHECK(reused == captured);
  CHECK(cache.stats().segments == 2);
  for (void* p : held) CHECK(cache.free(p));
  CHECK(cache.free(reused));
  CHECK(cache.free(ordinary));
  CHECK(cache.stats().allocated_bytes == 0);
}

TEST_CASE("releasing a private pool also hands over its blocks still in use") {
  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src);
  constexpr StreamId kPool = (StreamId(1) << 63) | 3;
  cache.open_private_pool(kPool);
  void* kept = cache.allocate(8 * KiB, 0);  // an array made during a capture that outlives the graph
  cache.close_private_pool();
  cache.release_private_pool(kPool, 0);
  CHECK(cache.free(kept));
  void* next = cache.allocate(8 * KiB, 0);  // stream 0's now: its block is reused
  CHECK(next == kept);
  CHECK(cache.free(next));
  CHECK(cache.stats().segments == 1);
}

TEST_CASE("statistics are exact after a sequence") {
  HostSegmentSource src(256 * MiB);
  CachingAllocator cache(src);
  void* a = cache.allocate(1000, 0);          // 1024 in a 2 MiB segment
  void* b = cache.allocate(3 * MiB, 0);       // 3 MiB in a 20 MiB segment
  void* c = cache.allocate(21 * MiB + 1, 0);  // 21 MiB + 512 rounded: a 22 MiB segment, whole
  CachingStats s = cache.stats();
  CHECK(s.allocated_bytes == 1024 + 3 * MiB + 22 * MiB);
  CHECK(s.reserved_bytes == 44 * MiB);
  CHECK(s.cached_bytes() == 44 * MiB - s.allocated_bytes);
  CHECK(s.active_blocks == 3);
  CHECK(s.active_bytes == s.allocated_bytes);
  CHECK(s.segments == 3);
  CHECK(s.segment_allocs == 3);
  CHECK(s.splits == 2);  // a and b; c's rest (1 MiB - 512) is not worth a block
  CHECK(s.merges == 0);
  CHECK(s.cache_hits == 0);
  cache.free(b);
  void* d = cache.allocate(2 * MiB, 0);  // from b's merged block
  s = cache.stats();
  CHECK(s.allocated_bytes == 1024 + 2 * MiB + 22 * MiB);
  CHECK(s.peak_allocated_bytes == 1024 + 3 * MiB + 22 * MiB);
  CHECK(s.peak_reserved_bytes == 44 * MiB);
  CHECK(s.merges == 1);
  CHECK(s.splits == 3);
  CHECK(s.cache_hits == 1);
  cache.reset_peak();
  CHECK(cache.stats().peak_allocated_bytes == s.allocated_bytes);
  for (void* p : {a, c, d}) cache.free(p);
  s = cache.stats();
  CHECK(s.allocated_bytes == 0);
  CHECK(s.active_blocks == 0);
  CHECK(s.active_bytes == 0);
  CHECK(s.cached_bytes() == 44 * MiB);
  CHECK(s.alloc_retries == 0);
  CHECK(s.oom_count == 0);
}

TEST_CASE("a full device: cached segments are given back and the request retried once") {
  HostSegmentSource src(21 * MiB);
  CachingAllocator cache(src);
  cache.free(cache.allocate(5 * MiB, 0));  // the device now holds a free, cached 20 MiB segment
  void* p = cache.allocate(4096, 0);       // needs a 2 MiB small segment: 22 MiB > 21 MiB
  CHECK(p != nullptr);
  CachingStats s = cache.stats();
  CHECK(s.alloc_retries == 1);
  CHECK(s.segment_frees == 1);
  CHECK(s.reserved_bytes == 2 * MiB);
  CHECK(s.oom_count == 0);
  CHECK(src.calls().allocate == 3);  // 20 MiB, the refused 2 MiB, the retried 2 MiB

  CHECK(cache.allocate(20 * MiB, 0) == nullptr);  // more than the device has left, even when emptied
  s = cache.stats();
  CHECK(s.alloc_retries == 2);
  CHECK(s.oom_count == 1);
  CHECK(cache.block_size(p) == 4096);  // a block in use survives the release
  cache.free(p);
}

TEST_CASE("the destructor gives every segment back, blocks still handed out included") {
  HostSegmentSource src(256 * MiB);
  {
    CachingAllocator cache(src);
    void* live = cache.allocate(4096, 0);
    cache.allocate(4 * MiB, 0);
    cache.record_stream(live, 5);
    cache.free(live);  // pending at destruction
    cache.allocate(64, 3);
    CHECK(src.used_bytes() == 24 * MiB);
  }
  CHECK(src.used_bytes() == 0);
  CHECK(src.live_events() == 0);
}
