// The reclaim queue's drain: bounded (Note [Bounded drains]) and without lost
// wake-ups (Note [Drain hand-off]). docs/design.md §3, invariant 2.
#include <doctest/doctest.h>

#include <atomic>
#include <barrier>
#include <new>
#include <thread>
#include <vector>

#include "core/autoclose.hpp"
#include "core/reclaim_queue.hpp"
#include "support/sanitizers.hpp"
#include "test_util.hpp"

using namespace ndgc;
using detail::kDrainBatch;
using test::AutoClose;

namespace {

// Work that arrives while a drain runs, deterministically: a wake-up hook that
// drops a few more handles (queueing their arrays) and wakes the drain again,
// every time the drain meets the wake sentinel. A drain that loops until the
// queue is empty chases it until the pool runs dry.
std::vector<NDArray>* g_pool = nullptr;
std::atomic<std::size_t> g_wakes{0};
constexpr std::size_t kPerWake = 8;

void on_wake_orphan_more() noexcept {
  g_wakes.fetch_add(1, std::memory_order_relaxed);
  for (std::size_t i = 0; i < kPerWake && !g_pool->empty(); ++i) g_pool->pop_back();
  if (!g_pool->empty()) detail::reclaim_queue_wake();
}
void noop() {}
void noop_noexcept() noexcept {}
void* new_handle(std::size_t n) noexcept { return ::operator new(n, std::nothrow); }
void delete_handle(void* p) noexcept { ::operator delete(p); }
constexpr detail::TraceHooks kEndlessWork{noop, noop, noop, on_wake_orphan_more, noop_noexcept, new_handle,
                                          delete_handle};

// Installs kEndlessWork over a pool of `n` arrays of `m` for one test.
class EndlessWork {
 public:
  EndlessWork(NDManager& m, std::size_t n) {
    REQUIRE(detail::trace_hooks() == nullptr);  // this binary does not link ndgc::trace
    for (std::size_t i = 0; i < n; ++i) pool_.push_back(m.zeros({4}));
    g_pool = &pool_;
    g_wakes = 0;
    detail::set_trace_hooks(&kEndlessWork);
    detail::reclaim_queue_wake();
  }
  ~EndlessWork() {
    pool_.clear();
    gc::poll();
    detail::set_trace_hooks(nullptr);
    g_pool = nullptr;
  }
  std::size_t left() const { return pool_.size(); }

 private:
  std::vector<NDArray> pool_;
};

}  // namespace

TEST_CASE("a drain at an entry point closes at most one batch; later calls continue from the backlog") {
  AutoClose on(true);
  NDManager m = NDManager::new_base_manager("bounded");
  NDArray keep = m.ones({1});
  const std::size_t n = 3 * kDrainBatch + 7;
  {
    std::vector<NDArray> temps;
    for (std::size_t i = 0; i < n; ++i) temps.push_back(m.zeros({2}));
  }  // n orphans, queued at once
  REQUIRE(m.array_count() == n + 1);
  (void)keep.shape();  // one entry point: one batch
  CHECK(m.array_count() == n + 1 - kDrainBatch);
  // The rest sits in the drain's backlog with an empty head: the fast path
  // must still see it.
  (void)keep.shape();
  CHECK(m.array_count() == n + 1 - 2 * kDrainBatch);
  CHECK(gc::poll() == n - 2 * kDrainBatch);  // poll() finishes what was queued before it
  CHECK(m.array_count() == 1);
  CHECK(gc::poll() == 0);
}

TEST_CASE("an entry point does not chase orphans that are made while it drains") {
  AutoClose on(true);
  NDManager m = NDManager::new_base_manager("chase-entry");
  NDArray keep = m.ones({1});
  EndlessWork work(m, 20 * kDrainBatch);
  const std::size_t before = work.left();
  (void)keep.shape();
  // An unbounded drain keeps meeting the wake sentinel until the pool is empty.
  CHECK(before - work.left() <= kDrainBatch * kPerWake);
  CHECK(work.left() > 0);
}

TEST_CASE("gc::poll() returns once what was orphaned before it is closed, whatever arrives meanwhile") {
  AutoClose on(true);
  NDManager m = NDManager::new_base_manager("chase-poll");
  std::vector<NDArray> earlier;
  for (int i = 0; i < 100; ++i) earlier.push_back(m.zeros({4}));
  EndlessWork work(m, 20 * kDrainBatch);
  const std::size_t before = work.left();
  earlier.clear();  // 100 orphans queued before poll()
  std::uint64_t closed = gc::poll();
  CHECK(closed >= 100);
  CHECK(work.left() > 0);
  CHECK(before - work.left() <= (kDrainBatch + 8) * kPerWake);
}

TEST_CASE("closing a manager does not drain orphans that keep arriving") {
  AutoClose on(true);
  NDManager m = NDManager::new_base_manager("chase-close");
  EndlessWork work(m, 20 * kDrainBatch);
  const std::size_t before = work.left();
  {
    NDManager sub = m.new_sub_manager("short-lived");
    NDArray x = sub.ones({3});
  }  // the destructor is an entry point, then closes `sub`
  CHECK(before - work.left() <= 2 * kDrainBatch * kPerWake);
  CHECK(work.left() > 0);
}

TEST_CASE("a waiting poll() is not starved by threads that keep draining at entry points") {
  AutoClose on(true);
  NDManager m = NDManager::new_base_manager("starve");
#if NDGC_TSAN || NDGC_ASAN
  constexpr int kBatches = 300;
#else
  constexpr int kBatches = 3000;
#endif
  std::atomic<bool> stop{false};
  std::atomic<int> running{3};
  std::vector<std::thread> producers;
  for (int t = 0; t < 3; ++t)
    producers.emplace_back([&] {
      // Capped, so the work is bounded even if the producers outrun the closing.
      for (int b = 0; b < kBatches && !stop.load(std::memory_order_relaxed); ++b)
        for (int i = 0; i < 64; ++i) NDArray a = m.zeros({2});
      running.fetch_sub(1);
    });
  int polls = 0;
  while (running.load() > 0 && polls < 200) {  // each returns although the producers go on
    gc::poll();
    ++polls;
    std::this_thread::yield();
  }
  stop = true;
  for (auto& p : producers) p.join();
  gc::poll();
  CHECK(polls > 0);
  CHECK(m.array_count() == 0);
}

TEST_CASE("no lost wake-up: once every thread stops orphaning and makes one more call, no orphan is left") {
  // Note [Drain hand-off]: a thread pushes its last orphan, then its last
  // call finds another thread draining and leaves; that drainer must see the
  // push. Many short rounds make the race window come up often.
  AutoClose on(true);
  NDManager m = NDManager::new_base_manager("handoff");
  constexpr int kThreads = 4;
#if NDGC_TSAN || NDGC_ASAN
  constexpr int kRounds = 300;
#else
  constexpr int kRounds = 10000;
#endif
  std::vector<NDArray> keep;
  for (int t = 0; t < kThreads; ++t) keep.push_back(m.ones({1}));
  std::atomic<std::size_t> stranded_rounds{0};
  std::barrier start(kThreads + 1), done(kThreads + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        start.arrive_and_wait();
        for (int i = 0; i <= (r + t) % 5; ++i) NDArray a = m.zeros({2});  // the last drop is the last push
        (void)keep[t].shape();                                               // one more library call
        done.arrive_and_wait();
      }
    });
  for (int r = 0; r < kRounds; ++r) {
    start.arrive_and_wait();
    done.arrive_and_wait();
    // No library call here: array_count() does not drain.
    if (m.array_count() != kThreads) stranded_rounds.fetch_add(1);
    gc::poll();
  }
  for (auto& t : threads) t.join();
  CHECK(stranded_rounds.load() == 0);
  CHECK(m.array_count() == kThreads);
}
