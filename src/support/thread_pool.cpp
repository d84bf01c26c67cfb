// The intra-op thread pool: N - 1 library threads that, with the caller, run
// the pieces of one kernel at a time.
//
// A region (support::run_tasks) publishes a task count and a TaskRef, wakes
// the pool, takes pieces itself, and returns once every piece has finished
// and no pool thread can touch the TaskRef any more (Note [Leaving a
// region]). Pieces are claimed one by one from an atomic counter, so a pool
// thread that wakes late simply finds less to do. One region at a time: a
// second thread that finds the pool busy (try_lock) runs its region inline,
// which costs nothing in determinism (see support/parallel.hpp) and avoids
// queueing one op behind another. Pool threads spin briefly after a region,
// then sleep on a condition variable, so back-to-back kernels of a training step do
// not pay a futex wake each.
//
// Note [What pool threads may do]: kernel arithmetic on memory the caller
// already owns, nothing else. They never drain the reclaim queue, create or
// close arrays, touch the registry or a manager, allocate from a workspace or
// run user code: every action with a memory meaning stays on the calling
// thread, so auto-close, workspaces, fault injection and error reports mean
// what they mean without threads. They hold no handles, so the trace
// detector has nothing to find on their stacks (one that allocates, say an
// exception's message, registers itself through the detector's operator new
// like any other thread).
//
// Note [Pool and fork]: a child forked while the pool runs has none of its
// threads, and the pool's mutex may be locked by a thread that does not exist
// there. The child handler (pthread_atfork) forgets the pool without touching
// it (its few hundred bytes leak in the child) and the child starts a fresh
// one on its first parallel op, as PyTorch does for its own pools.
#include "support/parallel.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/parallel.hpp"
#include "support/assert.hpp"
#include "support/options.hpp"
#include "support/scope_exit.hpp"

namespace ndgc {
namespace support {
namespace {

thread_local bool t_in_region = false;

class Pool {
 public:
  explicit Pool(int threads) : threads_(threads) {
    workers_.reserve(std::size_t(threads - 1));
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  // Stops and joins the threads; the object itself is never freed (Note
  // [Retired pools]).
  void retire() {
    stop_.store(true);
    epoch_.fetch_add(1);
    wake_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  int threads() const noexcept { return threads_; }
  std::mutex& region_mutex() noexcept { return region_; }

  // Called with region_mutex() held.
  void run(std::int64_t count, TaskRef task) {
    NDGC_ASSERT(task_ == nullptr, "one region at a time: the last one cleared its task");
    task_ = &task;
    count_ = count;
    next_.store(0, std::memory_order_relaxed);
    failed_at_ = count;
    error_ = nullptr;
    open_.store(true);
    epoch_.fetch_add(1);
    // Note [Waking the pool]: a thread that is about to sleep counts itself
    // in sleepers_ before it checks the epoch; we bump the epoch before we
    // read sleepers_. Sequentially consistent on both sides, so either we see
    // the sleeper and wake it, or it sees the new epoch and does not sleep.
    // Spinning threads cost no futex call.
    if (sleepers_.load() > 0) wake_all();
    take_pieces();
    // Note [Leaving a region]: a pool thread enters by incrementing inside_
    // and then checking open_; we close by clearing open_ and then waiting
    // for inside_ to reach zero. Both sides are sequentially consistent, so
    // a thread either sees open_ false and leaves without reading task_, or
    // its increment is seen here and we wait for it.
    open_.store(false);
    while (inside_.load() != 0) std::this_thread::yield();
    NDGC_ASSERT(next_.load(std::memory_order_relaxed) >= count_, "a region returns only once every piece was taken");
    task_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void take_pieces() {
    for (;;) {
      const std::int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
      if (i >= count_) return;
      try {
        (*task_)(i);
      } catch (...) {
        std::lock_guard lock(error_mutex_);
        if (i < failed_at_) {  // the lowest piece's error, whatever the timing
          failed_at_ = i;
          error_ = std::current_exception();
        }
      }
    }
  }

  void work() {
    t_in_region = true;  // anything a piece starts runs inline
    // The epoch the pool was made with, not the one this thread first sees:
    // a thread that starts late must not sleep through the regions (and the
    // retirement) that came before it.
    std::uint32_t seen = 0;
    for (;;) {
      // Spin a little before sleeping: the next kernel of a step usually
      // follows within microseconds.
      std::uint32_t now = seen;
      for (int spin = 0; spin < 2000 && (now = epoch_.load(std::memory_order_acquire)) == seen; ++spin)
        cpu_relax();
      if (now == seen) {  // See Note [Waking the pool]
        std::unique_lock lock(sleep_mutex_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return (now = epoch_.load()) != seen; });
        sleepers_.fetch_sub(1);
      }
      seen = now;
      if (stop_.load()) return;
      inside_.fetch_add(1);
      if (open_.load()) take_pieces();
      inside_.fetch_sub(1);
    }
  }

  // Taking the mutex orders this wake-up after a sleeper's check of the
  // epoch, which it makes holding the mutex: no wake-up is lost.
  void wake_all() {
    { std::lock_guard lock(sleep_mutex_); }
    wake_.notify_all();
  }

  static void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  const int threads_;
  std::vector<std::thread> workers_;
  std::mutex region_;
  std::atomic<std::uint32_t> epoch_{0};
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> open_{false};
  std::atomic<int> inside_{0};
  std::atomic<std::int64_t> next_{0};
  TaskRef* task_ = nullptr;
  std::int64_t count_ = 0;
  std::mutex error_mutex_;
  std::int64_t failed_at_ = 0;
  std::exception_ptr error_;

 public:
  Pool* next_retired = nullptr;
};


// Note [Retired pools]: a thread that read g_pool may still be about to
// try_lock its region mutex when another thread replaces the pool (a new
// count), so a replaced pool is stopped and joined but never freed: its
// mutex stays valid, and run_tasks, having locked it, sees that g_pool moved
// on and runs inline. Retired pools hang off g_retired (a few hundred bytes
// per change of the thread count), reachable to leak checkers. The current
// pool is not torn down at exit either: its threads sleep until the process
// ends, and no destructor can race an op still running on another thread.
std::atomic<int> g_threads{0};  // 0: not yet decided
std::atomic<Pool*> g_pool{nullptr};
Pool* g_retired = nullptr;  // guarded by g_pool_mutex
std::mutex g_pool_mutex;    // creates and retires pools

void forget_pool_in_child() {  // Note [Pool and fork]
  g_pool.store(nullptr, std::memory_order_relaxed);
  new (&g_pool_mutex) std::mutex();
}

int current_threads() {
  int n = g_threads.load(std::memory_order_relaxed);
  if (n > 0) return n;
  n = default_threads(options().num_threads, std::thread::hardware_concurrency(),
                      std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"));
  int expected = 0;
  return g_threads.compare_exchange_strong(expected, n) ? n : expected;
}

// The pool for `threads`, started on first use.
Pool* pool_for(int threads) {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p && p->threads() == threads) return p;
  static const bool at_fork = pthread_atfork(nullptr, nullptr, forget_pool_in_child) == 0;
  (void)at_fork;
  std::lock_guard lock(g_pool_mutex);
  p = g_pool.load();
  if (p && p->threads() == threads) return p;
  if (p) {
    std::lock_guard region(p->region_mutex());  // the region in flight ends first
    g_pool.store(nullptr);
    p->retire();
    p->next_retired = g_retired;
    g_retired = p;
  }
  p = new Pool(threads);
  g_pool.store(p, std::memory_order_release);
  return p;
}

}  // namespace

int default_threads(int configured, unsigned cores, const char* local_ranks) noexcept {
  if (configured > 0) return configured;
  int n = int(std::max(1u, cores));
  // Under mpirun the ranks on one host share its cores, as PyTorch's DDP
  // guidance shares them through OMP_NUM_THREADS.
  if (local_ranks) {
    const int ranks = std::atoi(local_ranks);
    if (ranks > 1) n = std::max(1, n / ranks);
  }
  return n;
}

int region_threads() noexcept {
  if (t_in_region) return 1;
  try {
    return current_threads();
  } catch (...) {  // a malformed NDGC_NUM_THREADS surfaces from num_threads()
    return 1;
  }
}

void run_tasks(std::int64_t count, TaskRef task) {
  const int threads = count > 1 ? region_threads() : 1;
  Pool* pool = threads > 1 ? pool_for(threads) : nullptr;
  std::unique_lock<std::mutex> region;
  if (pool) region = std::unique_lock(pool->region_mutex(), std::try_to_lock);
  const bool was_in_region = t_in_region;
  t_in_region = true;
  ScopeExit restore{[was_in_region] { t_in_region = was_in_region; }};
  if (!pool || !region.owns_lock() || g_pool.load() != pool) {
    // Inline: the same pieces in the same order. The lowest piece's error
    // wins here too, since pieces run in order and the first throw stops.
    for (std::int64_t i = 0; i < count; ++i) task(i);
    return;
  }
  pool->run(count, task);
}

}  // namespace support

void set_num_threads(int n) {
  if (n < 1)
    throw InvalidArgument(fmt::format("set_num_threads({}): the count includes the calling thread, so it must be at least 1", n));
  support::g_threads.store(n);
}

int num_threads() { return support::current_threads(); }

}  // namespace ndgc
