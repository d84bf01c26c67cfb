// Multi-threaded stress: threads create, copy, share (through a queue), use
// and drop handles, close managers and toggle auto-close while others work.
// At the end, invariants 1 and 4 of docs/design.md §3 must hold: no array a
// handle reached was ever closed by auto-close, and every byte is returned.
#include <doctest/doctest.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

using namespace ndgc;

namespace {

struct Shared {
  std::mutex mu;
  std::deque<NDArray> queue;             // handles passed between threads
  std::vector<ManagerRef> managers;      // open managers any thread may use or close
  std::atomic<int> autoclose_errors{0};  // ArrayClosed blamed on auto-close: invariant 1 broken
  std::atomic<long> ops{0};
};

// Runs f, tolerating the errors that concurrent closes legitimately cause.
template <class F>
void tolerant(Shared& s, F&& f) {
  try {
    f();
  } catch (const ArrayClosed& e) {
    if (test::closed_by_reclaim(e)) ++s.autoclose_errors;
  } catch (const ManagerClosed&) {
  }
}

void worker(Shared& s, unsigned seed, int iterations) {
  std::mt19937 rng(seed);
  std::vector<NDArray> mine;
  for (int i = 0; i < iterations; ++i) {
    ManagerRef m;
    {
      std::lock_guard lock(s.mu);
      m = s.managers[rng() % s.managers.size()];
    }
    switch (rng() % 8) {
      case 0:
      case 1:  // create
        tolerant(s, [&] { mine.push_back(m.ones({int64_t(1 + rng() % 64)})); });
        break;
      case 2:  // op on own handles (output joins the first input's manager)
        if (!mine.empty())
          tolerant(s, [&] {
            NDArray& a = mine[rng() % mine.size()];
            mine.push_back(a.mul(2.0).add(a));
          });
        break;
      case 3:  // hand a copy to another thread
        if (!mine.empty()) {
          std::lock_guard lock(s.mu);
          s.queue.push_back(mine[rng() % mine.size()]);
        }
        break;
      case 4: {  // take a handle from another thread and use it
        NDArray got;
        {
          std::lock_guard lock(s.mu);
          if (!s.queue.empty()) {
            got = std::move(s.queue.front());
            s.queue.pop_front();
          }
        }
        if (got.defined()) tolerant(s, [&] { (void)got.sum().item<float>(); });
        break;
      }
      case 5:  // drop handles
        if (!mine.empty()) mine.erase(mine.begin() + long(rng() % mine.size()));
        break;
      case 6:  // now and then, close a manager and open a fresh one in its place
        if (rng() % 50 == 0) test::replace_and_close_one(s.mu, s.managers, rng, "stress");
        break;
      case 7:  // toggle auto-close
        if (rng() % 100 == 0) (rng() % 2) ? gc::enable() : gc::disable();
        break;
    }
    ++s.ops;
  }
}

}  // namespace

TEST_CASE("stress: threads create, share, drop, close managers and toggle auto-close") {
  test::AutoClose restore(true);
  const std::uint64_t before = test::host_bytes();
  constexpr int kThreads = 4, kIterations = 20000;
  {
    Shared s;
    for (int i = 0; i < 4; ++i) s.managers.push_back(NDManager::new_base_manager("stress").release());
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, std::ref(s), 1234u + unsigned(t), kIterations);
    for (auto& t : threads) t.join();
    CHECK(s.autoclose_errors == 0);  // invariant 1
    CHECK(s.ops == long(kThreads) * kIterations);
    s.queue.clear();
    for (ManagerRef& m : s.managers) m.close();
  }
  gc::poll();
  CHECK(test::host_bytes() == before);  // invariant 4
}
