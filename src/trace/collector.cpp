// The collector: Boehm GC's set-up, its collect window and the work it hands
// to the library's drain.
//
// Finalizers run on demand (GC_set_finalize_on_demand), never inside an
// allocation: Boehm would otherwise run them from whatever allocation
// triggered the collection, possibly inside a library lock, and a finalizer
// that takes a lock or allocates there can deadlock. Instead, when a
// collection leaves finalizers ready, Boehm calls our notifier, which only
// wakes the reclaim queue (lock-free, no allocation; Note [Drain wake-ups] in
// src/core/reclaim_queue.hpp); the next library call on any thread drains,
// and the drain calls on_wake(), which runs them. Collections themselves may
// happen anywhere (Boehm triggers them from allocations, including the
// global operator new): they only mark and queue, which is safe.
//
// The collect window (ND4J's auto-GC window): allocation paths of the
// library (keys, `new NDArray`) read a coarse clock and wake the drain once
// the window has passed since the last collection of any kind (a start
// callback stamps each one); the drain then collects, at an entry point
// where the thread holds no library lock. Key numbers: default window 1 s;
// the check costs one coarse clock read (~5 ns) per traced key.
#include "trace/collector.hpp"

#include <ctime>

#include <atomic>
#include <chrono>
#include <cstdint>

#include <gc/gc.h>
#include <gc/gc_mark.h>  // GC_set_start_callback

#include "core/reclaim_queue.hpp"
#include "ndgc/trace.hpp"
#include "trace/leak_list.hpp"
#include "trace/threads.hpp"

namespace ndgc::trace::detail {
namespace {

constexpr std::int64_t kDefaultWindowNs = 1'000'000'000;

std::atomic<std::int64_t> g_window_ns{kDefaultWindowNs};
std::atomic<std::int64_t> g_last_collection_ns{0};
std::atomic<std::uint64_t> g_finalizers_run{0};
std::atomic<std::uint64_t> g_collect_time_ns{0};

std::int64_t now_ns(clockid_t clock) noexcept {
  timespec ts{};
  clock_gettime(clock, &ts);
  return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Called by Boehm with its lock held: no allocation, no GC calls.
void GC_CALLBACK on_collection_start() { g_last_collection_ns.store(now_ns(CLOCK_MONOTONIC_COARSE), std::memory_order_relaxed); }

// Called by Boehm outside its lock, on whichever thread finished a collection
// that left finalizers ready: possibly inside a library lock, so only wake.
void GC_CALLBACK on_finalizers_ready() { ndgc::detail::reclaim_queue_wake(); }

bool window_passed() noexcept {
  std::int64_t window = g_window_ns.load(std::memory_order_relaxed);
  if (window <= 0) return false;
  return now_ns(CLOCK_MONOTONIC_COARSE) - g_last_collection_ns.load(std::memory_order_relaxed) >= window;
}

void timed_collect() noexcept {
  register_this_thread();  // Boehm aborts a collection started by an unregistered thread
  std::int64_t start = now_ns(CLOCK_MONOTONIC);
  GC_gcollect();
  g_collect_time_ns.fetch_add(std::uint64_t(now_ns(CLOCK_MONOTONIC) - start), std::memory_order_relaxed);
}

bool init_collector() noexcept {
  GC_set_finalize_on_demand(1);
  GC_set_finalizer_notifier(&on_finalizers_ready);
  GC_INIT();
  GC_set_start_callback(&on_collection_start);
  g_last_collection_ns.store(now_ns(CLOCK_MONOTONIC_COARSE), std::memory_order_relaxed);
  GC_allow_register_threads();
  return true;
}

}  // namespace

void ensure_initialized() noexcept {
  static const bool initialized = init_collector();
  (void)initialized;
}

void collect_now() noexcept {
  ensure_initialized();
  timed_collect();
  ndgc::detail::reclaim_queue_wake();
}

void on_wake() noexcept {
  if (window_passed()) timed_collect();
  if (GC_should_invoke_finalizers()) {
    register_this_thread();
    g_finalizers_run.fetch_add(std::uint64_t(GC_invoke_finalizers()), std::memory_order_relaxed);
  }
  forward_leaked();
}

void poke() noexcept {
  if (GC_should_invoke_finalizers() || window_passed()) ndgc::detail::reclaim_queue_wake();
}

}  // namespace ndgc::trace::detail

namespace ndgc {

std::uint64_t gc::collect() {
  trace::detail::collect_now();
  return ndgc::detail::drain_now();
}

void gc::set_collect_window(std::chrono::milliseconds window) {
  trace::detail::g_window_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(window).count(),
                                   std::memory_order_relaxed);
}

std::chrono::milliseconds gc::collect_window() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::nanoseconds(trace::detail::g_window_ns.load(std::memory_order_relaxed)));
}

trace::Stats trace::stats() noexcept {
  trace::Stats s;
  s.collections = GC_get_gc_no();
  s.heap_bytes = GC_get_heap_size();
  s.finalizers_run = detail::g_finalizers_run.load(std::memory_order_relaxed);
  s.collect_time_ms = detail::g_collect_time_ns.load(std::memory_order_relaxed) / 1'000'000;
  return s;
}

}  // namespace ndgc
