// The caching allocator under four threads (tools/test runs this suite
// under TSan): random allocate / free / record_stream / event completion /
// empty_cache; no two live blocks overlap, and the statistics are exact once
// every thread is done.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "memory/caching_allocator.hpp"
#include "memory/host_segment_source.hpp"

using namespace ndgc::memory;

namespace {

// Live blocks by address, across threads. A block leaves it before free()
// and joins it after allocate(), so a block the allocator hands out while
// the map still holds an overlapping one is a real overlap.
class LiveSet {
 public:
  bool insert(const char* p, std::size_t n) {
    std::lock_guard lock(mu_);
    auto next = live_.lower_bound(p);
    if (next != live_.end() && next->first < p + n) return false;
    if (next != live_.begin() && std::prev(next)->first + std::prev(next)->second > p) return false;
    live_.emplace(p, n);
    return true;
  }
  void erase(const char* p) {
    std::lock_guard lock(mu_);
    live_.erase(p);
  }

 private:
  std::mutex mu_;
  std::map<const char*, std::size_t> live_;
};

struct Live {
  char* p;
  std::size_t n;
  unsigned char tag;
};

}  // namespace

TEST_CASE("four threads: no overlapping blocks, exact statistics at the end") {
  constexpr std::size_t MiB = 1 << 20;
  HostSegmentSource src(1024 * MiB);
  CachingAllocator cache(src);
  LiveSet live_set;
  std::atomic<std::uint64_t> allocations{0}, overlaps{0}, corrupted{0}, failed{0};

  auto worker = [&](int id) {
    std::mt19937 rng(std::uint32_t(1234 + id));
    std::vector<Live> mine;
    auto release = [&](std::size_t k) {
      Live b = mine[k];
      if (static_cast<unsigned char>(b.p[0]) != b.tag || static_cast<unsigned char>(b.p[b.n - 1]) != b.tag)
        corrupted.fetch_add(1);
      live_set.erase(b.p);
      if (!cache.free(b.p)) failed.fetch_add(1);
      mine[k] = mine.back();
      mine.pop_back();
    };
    for (int op = 0; op < 3000; ++op) {
      unsigned r = rng() % 100;
      if (r < 45 || mine.empty()) {
        std::size_t n = rng() % 8 == 0 ? 1 + rng() % (3 * MiB) : 1 + rng() % (64 << 10);
        StreamId stream = rng() % 3 == 0 ? 0 : StreamId(id + 1);  // shared default stream or its own
        char* p = static_cast<char*>(cache.allocate(n, stream));
        if (!p) {
          failed.fetch_add(1);
          continue;
        }
        allocations.fetch_add(1);
        if (!live_set.insert(p, n)) overlaps.fetch_add(1);
        auto tag = static_cast<unsigned char>(rng());
        p[0] = p[n - 1] = static_cast<char>(tag);
        mine.push_back({p, n, tag});
      } else if (r < 85) {
        release(rng() % mine.size());
      } else if (r < 95) {
        if (!cache.record_stream(mine[rng() % mine.size()].p, StreamId(1 + rng() % 5))) failed.fetch_add(1);
      } else if (r < 98) {
        src.complete_events(StreamId(1 + rng() % 5));
      } else {
        cache.empty_cache();
        CachingStats s = cache.stats();
        if (!(s.allocated_bytes <= s.active_bytes && s.active_bytes <= s.reserved_bytes)) failed.fetch_add(1);
      }
    }
    while (!mine.empty()) release(mine.size() - 1);
  };
  std::vector<std::thread> threads;
  for (int id = 0; id < 4; ++id) threads.emplace_back(worker, id);
  for (auto& t : threads) t.join();

  CHECK(overlaps == 0);
  CHECK(corrupted == 0);
  CHECK(failed == 0);
  src.complete_all();
  cache.free(cache.allocate(1, 0));  // processes the completed events
  CachingStats s = cache.stats();
  CHECK(s.allocated_bytes == 0);
  CHECK(s.active_bytes == 0);
  CHECK(s.active_blocks == 0);
  CHECK(s.pending_blocks == 0);
  CHECK(s.cache_hits + s.segment_allocs == allocations + 1);  // no allocation failed, each miss made one segment
  CHECK(s.splits == s.merges);  // every segment is one free block again
  auto segments = cache.snapshot();
  CHECK(segments.size() == s.segments);
  std::uint64_t reserved = 0;
  for (auto& seg : segments) {
    CHECK(seg.blocks.size() == 1);
    reserved += seg.size;
  }
  CHECK(reserved == s.reserved_bytes);
  CHECK(src.used_bytes() == s.reserved_bytes);
  CHECK(src.live_events() == 0);
  cache.empty_cache();
  s = cache.stats();
  CHECK(s.reserved_bytes == 0);
  CHECK(s.segment_allocs == s.segment_frees);
  CHECK(src.used_bytes() == 0);
}
