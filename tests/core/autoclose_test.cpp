// Auto-close: docs/design.md §3 invariants 1, 2 and 5.
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "test_util.hpp"

using namespace ndgc;
using test::AutoClose;
using test::host_bytes;

TEST_CASE("auto-close is off by default") {
  // NDGC_AUTOCLOSE is not set for the test run (tools/test and CTest do not set it).
  CHECK_FALSE(gc::enabled());
}

TEST_CASE("invariant 2: an orphan is closed by the next library call") {
  AutoClose on(true);
  NDManager m = NDManager::new_base_manager("inv2");
  NDArray keep = m.ones({4});
  std::uint64_t before = host_bytes();
  auto queued = gc::stats().queued;
  { NDArray t = m.zeros({1000}); }
  CHECK(gc::stats().queued == queued + 1);
  CHECK(m.array_count() == 2);  // queued, not yet closed: nothing has run since
  (void)keep.shape();           // any library call drains
  CHECK(m.array_count() == 1);
  CHECK(host_bytes() == before);
}

TEST_CASE("invariant 2: gc::poll() closes orphans and reports them in stats") {
  AutoClose on(true);
  NDManager m = NDManager::new_base_manager("poll");
  auto s0 = gc::stats();
  std::vector<NDArray> temps;
  for (int i = 0; i < 10; ++i) temps.push_back(m.zeros({256}));
  temps.clear();  // ten orphans, and no library call since
  CHECK(gc::poll() == 10);
  auto s1 = gc::stats();
  CHECK(s1.reclaimed - s0.reclaimed == 10);
  CHECK(s1.reclaimed_bytes - s0.reclaimed_bytes == 10 * 256 * 4);
  CHECK(s1.drains > s0.drains);
  CHECK(m.array_count() == 0);
}

TEST_CASE("invariant 2: a handle dropped on another thread is reclaimed by a call on this one") {
  AutoClose on(true);
  NDManager m = NDManager::new_base_manager("threads");
  NDArray a = m.ones({128});
  std::thread([h = std::move(a)]() mutable { h.reset(); }).join();
  CHECK(m.array_count() == 1);
  NDArray other = m.zeros({1});  // a factory is a library call too
  CHECK(m.array_count() == 1);   // only `other` remains
}

TEST_CASE("invariant 1: arrays a handle still reaches are never reclaimed") {
  AutoClose on(true);
  NDManager m = NDManager::new_base_manager("inv1");
  NDArray base = m.arange(0, 12);
  NDList list{m.ones({3})};
  std::vector<NDArray> vec{m.full({2}, 7)};
  NDArray copy;
  { NDArray original = m.zeros({5}); copy = original; }
  NDArray view;
  { NDArray t = m.arange(0, 6); view = t.reshape({2, 3}); }  // t's array is closed; its storage lives in the view
  for (int i = 0; i < 3; ++i) gc::poll();
  CHECK_FALSE(base.is_closed());
  CHECK(list[0].to_vector<float>() == std::vector<float>{1, 1, 1});
  CHECK(vec[0].to_vector<float>() == std::vector<float>{7, 7});
  CHECK(copy.to_vector<float>() == std::vector<float>(5, 0.0f));
  CHECK(view.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("with auto-close off, dropped arrays stay in their manager until it closes") {
  AutoClose off(false);
  std::uint64_t before = host_bytes();
  {
    NDManager m = NDManager::new_base_manager("djl");
    for (int i = 0; i < 5; ++i) NDArray t = m.zeros({100});
    gc::poll();
    CHECK(m.array_count() == 5);
    CHECK(host_bytes() == before + 5 * 400);
  }
  CHECK(host_bytes() == before);
}

TEST_CASE("invariant 5: switching at run time is safe; sweep() closes orphans left while off") {
  AutoClose off(false);
  NDManager m = NDManager::new_base_manager("sweep");
  NDArray kept = m.ones({2});
  for (int i = 0; i < 4; ++i) NDArray t = m.zeros({10});
  gc::enable();
  gc::poll();
  CHECK(m.array_count() == 5);  // orphaned while off: enabling does not close them
  auto s0 = gc::stats();
  CHECK(gc::sweep() == 4);
  CHECK(gc::stats().swept - s0.swept == 4);
  CHECK(m.array_count() == 1);
  CHECK_FALSE(kept.is_closed());
  // Queued while on, then switched off before the drain: still closed.
  { NDArray t = m.zeros({10}); }
  gc::disable();
  gc::poll();
  CHECK(m.array_count() == 1);
}

TEST_CASE("auto-close reaches arrays in long-lived managers: the DJL leak pattern") {
  AutoClose on(true);
  NDManager model = NDManager::new_base_manager("model");
  NDArray w = model.ones({8, 8});
  std::uint64_t before = host_bytes();
  for (int step = 0; step < 100; ++step) {
    NDManager batch = model.new_sub_manager("batch");
    NDArray x = batch.ones({8, 8});
    NDArray h = w.matmul(x).relu();  // joins `model` (first input), dies at the end of the step
  }
  gc::poll();
  CHECK(model.array_count() == 1);
  CHECK(host_bytes() == before);
}

TEST_CASE("drain is safe while handles are copied and dropped concurrently") {
  AutoClose on(true);
  NDManager m = NDManager::new_base_manager("concurrent");
  NDArray shared = m.ones({16});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        NDArray c = shared;             // copies of a reachable array
        NDArray tmp = c.mul(2.0);       // orphans, reclaimed by whichever thread enters next
        CHECK_FALSE(shared.is_closed());
      }
    });
  for (auto& t : threads) t.join();
  gc::poll();
  CHECK(m.array_count() == 1);
  CHECK(shared.handle_count() == 1);
}
