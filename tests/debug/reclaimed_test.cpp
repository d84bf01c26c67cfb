// debug::reclaimed(): what auto-close's drain and gc::sweep() closed, by
// creation site, while counting is on (Note [Reclaims by site]); on several
// threads too (this suite runs under TSan).
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "debug_test_util.hpp"

namespace ndgc {
namespace {

// Counting on for one test, off and cleared afterwards.
struct Counting {
  Counting() {
    debug::reset_reclaimed();
    debug::set_count_reclaimed(true);
  }
  ~Counting() {
    debug::set_count_reclaimed(false);
    debug::reset_reclaimed();
  }
};

const debug::OrphanGroup* reclaimed_at(const debug::OrphanReport& r, int line) {
  for (const debug::OrphanGroup& g : r.groups)
    if (g.site.line == std::uint32_t(line) && test::ends_with(g.site.file, "reclaimed_test.cpp")) return &g;
  return nullptr;
}

}  // namespace

TEST_CASE("reclaimed: off by default; on, auto-close's closes counted by site, largest first") {
  debug::reset_reclaimed();
  CHECK_FALSE(debug::count_reclaimed());
  NDManager m = NDManager::new_base_manager("reclaimed-test");
  {
    test::AutoClose on(true);
    { NDArray dropped = m.zeros({8}); }
    gc::poll();
  }
  CHECK(debug::reclaimed().groups.empty());  // not counting

  Counting counting;
  CHECK(debug::count_reclaimed());
  test::AutoClose on(true);
  int small_line = 0, big_line = 0;
  for (int i = 0; i < 10; ++i) {
    small_line = __LINE__ + 1;
    NDArray small = m.zeros({2});
  }
  for (int i = 0; i < 3; ++i) {
    big_line = __LINE__ + 1;
    NDArray big = m.zeros({1000});
  }
  const int kept_line = __LINE__ + 1;
  NDArray kept = m.zeros({4});  // a live handle: never reclaimed
  gc::poll();
  const debug::OrphanReport r = debug::reclaimed();
  const debug::OrphanGroup* small = reclaimed_at(r, small_line);
  const debug::OrphanGroup* big = reclaimed_at(r, big_line);
  REQUIRE(small);
  REQUIRE(big);
  CHECK(small->arrays == 10);
  CHECK(small->bytes == 10 * 8);
  CHECK(big->arrays == 3);
  CHECK(big->bytes == 3 * 4000);
  CHECK(r.groups.front().site == big->site);  // most bytes first
  CHECK(r.arrays >= 13);
  CHECK_FALSE(reclaimed_at(r, kept_line));
  CHECK(kept.size() == 4);
  debug::reset_reclaimed();
  CHECK(debug::reclaimed().groups.empty());
}

TEST_CASE("reclaimed: gc::sweep()'s closes are counted too") {
  Counting counting;
  test::AutoClose off(false);
  NDManager m = NDManager::new_base_manager("reclaimed-sweep");
  const int line = __LINE__ + 1;
  for (int i = 0; i < 5; ++i) (void)m.zeros({3});
  CHECK(gc::sweep() >= 5);
  const debug::OrphanReport r = debug::reclaimed();  // a local: reclaimed_at points into it
  const debug::OrphanGroup* g = reclaimed_at(r, line);
  REQUIRE(g);
  CHECK(g->arrays == 5);
  CHECK(g->bytes == 5 * 12);
}

TEST_CASE("reclaimed: four threads dropping arrays; every reclaim counted once") {
  Counting counting;
  test::AutoClose on(true);
  constexpr int kPerThread = 500;
  const int line = __LINE__ + 6;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      NDManager m = NDManager::new_base_manager("reclaimed-thread");
      for (int i = 0; i < kPerThread; ++i) {
        NDArray a = m.ones({4});
        (void)debug::reclaimed();  // readers beside the drains
      }
      gc::poll();
    });
  for (std::thread& t : threads) t.join();
  gc::poll();
  const debug::OrphanReport r = debug::reclaimed();
  const debug::OrphanGroup* g = reclaimed_at(r, line);
  REQUIRE(g);
  // Each thread's manager closes at its end: an array still queued then is
  // closed by its manager, not by auto-close, so it is not counted.
  CHECK(g->arrays <= 4 * kPerThread);
  CHECK(g->arrays >= 4 * (kPerThread - 1));
  CHECK(g->bytes == g->arrays * 16);
}

}  // namespace ndgc
