// Threads under the trace detector (src/trace/threads.cpp): their stacks are
// scanned once they touch the library, and collections forced from any
// thread never take a reachable handle for a leak (invariant 1).
#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "trace_util.hpp"

#include <gc/gc.h>

using namespace ndgc;
using test::TraceOn;

namespace {

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  int ready = 0;
  bool done = false;
  void arrive() {
    std::lock_guard lock(mu);
    ++ready;
    cv.notify_all();
  }
  void wait_ready(int n) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return ready >= n; });
  }
  void finish() {
    std::lock_guard lock(mu);
    done = true;
    cv.notify_all();
  }
  void wait_done() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return done; });
  }
};

}  // namespace

TEST_CASE("handles on the stack of another live thread are never reclaimed") {
  TraceOn on;
  test::settle();
  NDManager m = NDManager::new_base_manager("stacks");
  const std::uint64_t leaked = gc::stats().leaked_handles;
  Gate gate;
  std::mutex slot_mu;
  NDArray slot = m.arange(0, 4);
  std::atomic<int> failures{0};

  // Makes its own arrays: registered by its first key.
  std::thread maker([&] {
    NDArray local = m.full({64}, 2.0);
    auto* leaked_on_purpose_not = new NDArray(m.full({64}, 3.0));  // the stack points at it
    gate.arrive();
    gate.wait_done();
    if (local.sum().item<float>() != 128.0f) ++failures;
    if (leaked_on_purpose_not->sum().item<float>() != 192.0f) ++failures;
    delete leaked_on_purpose_not;
  });
  // Receives its only handle from another thread, after its first use of a
  // handle registered it (a thread that holds handles before it ever calls
  // the library is what trace::register_this_thread() is for).
  NDArray probe = m.ones({1});
  std::thread receiver([&] {
    (void)probe.shape();
    NDArray local;
    {
      std::lock_guard lock(slot_mu);
      local = std::move(slot);
    }
    (void)local.shape();
    gate.arrive();
    gate.wait_done();
    if (local.sum().item<float>() != 6.0f) ++failures;
  });
  gate.wait_ready(2);
  for (int i = 0; i < 20; ++i) {
    for (int j = 0; j < 100; ++j) (void)m.zeros({8}).add(1.0);  // garbage between collections
    gc::collect();
  }
  gate.finish();
  maker.join();
  receiver.join();
  CHECK(failures == 0);
  CHECK(gc::stats().leaked_handles == leaked);
}

TEST_CASE("a thread known to the collector only through operator new survives collections it starts") {
  // A collection Boehm starts on a thread it does not know aborts the
  // process ("Collecting from unknown thread"). This thread's first contact
  // with the collector is operator new, which registers it; then it makes
  // collectable garbage, so that Boehm starts collections on it.
  TraceOn on;
  const auto c0 = trace::stats().collections;
  std::thread allocator([&] {
    auto first = std::make_unique<std::string>(100, 'x');  // registers this thread
    while (trace::stats().collections < c0 + 10) {
      for (int i = 0; i < 1000; ++i) (void)GC_malloc(4000);
    }
  });
  allocator.join();
  CHECK(trace::stats().collections >= c0 + 10);
}

namespace {

struct Shared {
  std::mutex mu;
  std::deque<NDArray> queue;
  std::atomic<int> violations{0};  // a reachable handle's array closed by the detector
  std::atomic<long> ops{0};
};

void check_closed(Shared& s, const ArrayClosed& e) {
  if (std::string(e.what()).find("trace detector") != std::string::npos) ++s.violations;
}

void worker(Shared& s, ManagerRef m, unsigned seed, int iterations) {
  std::mt19937 rng(seed);
  std::vector<NDArray> mine;
  std::vector<NDArray*> boxed;  // `new NDArray` objects, reachable through this vector
  for (int i = 0; i < iterations; ++i) {
    try {
      switch (rng() % 7) {
        case 0:
        case 1: mine.push_back(m.ones({std::int64_t(1 + rng() % 32)})); break;
        case 2:
          if (!mine.empty()) {
            NDArray& a = mine[rng() % mine.size()];
            mine.push_back(a.mul(2.0).add(a));
          }
          break;
        case 3:
          if (!mine.empty()) {
            std::lock_guard lock(s.mu);
            s.queue.push_back(mine[rng() % mine.size()]);
          }
          break;
        case 4: {
          NDArray got;
          {
            std::lock_guard lock(s.mu);
            if (!s.queue.empty()) {
              got = std::move(s.queue.front());
              s.queue.pop_front();
            }
          }
          if (got.defined()) (void)got.sum().item<float>();
          break;
        }
        case 5:
          if (!mine.empty()) mine.erase(mine.begin() + long(rng() % mine.size()));
          if (mine.size() > 64) mine.resize(32);
          break;
        case 6:
          if (boxed.size() < 16) {
            boxed.push_back(new NDArray(m.ones({4})));
          } else {
            (void)boxed[rng() % boxed.size()]->sum().item<float>();
            delete boxed.back();
            boxed.pop_back();
          }
          break;
      }
      for (const NDArray* b : boxed) (void)b->shape();
    } catch (const ArrayClosed& e) {
      check_closed(s, e);
    }
    ++s.ops;
  }
  for (NDArray* b : boxed) delete b;
}

}  // namespace

TEST_CASE("threads with forced collections keep invariant 1") {
  TraceOn on;
  test::settle();
  NDManager m = NDManager::new_base_manager("mt");
  const std::uint64_t before = test::host_bytes();
  const std::uint64_t leaked = gc::stats().leaked_handles;
  constexpr int kThreads = 3, kIterations = 6000;
  {
    Shared s;
    std::atomic<bool> stop{false};
    std::thread collector([&] {
      while (!stop.load()) {
        gc::collect();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, std::ref(s), ManagerRef(m), 99u + unsigned(t), kIterations);
    for (auto& t : threads) t.join();
    stop = true;
    collector.join();
    CHECK(s.violations == 0);
    CHECK(s.ops == long(kThreads) * kIterations);
    CHECK(gc::stats().leaked_handles == leaked);  // nothing here leaks: no false finds
  }
  gc::collect();
  CHECK(m.array_count() == 0);
  CHECK(test::host_bytes() == before);
}
