// The auto-close switch and its counters, shared by the handle destructor
// (key.cpp), the drain (reclaim_queue.cpp) and the gc:: API (autoclose.cpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ndgc/gc.hpp"
#include "ndgc/ndarray.hpp"  // Site
#include "support/sharded_counters.hpp"

namespace ndgc::detail {

extern std::atomic<bool> g_autoclose;
inline bool autoclose_on() noexcept { return g_autoclose.load(std::memory_order_relaxed); }

// gc::stats() counters. The ones bumped on every reclaim are sharded per
// thread (Note [Sharded counters]); leaked_handles is rare and stays shared.
enum GcCounter : std::size_t { kQueued, kReclaimed, kReclaimedBytes, kDrains, kSwept, kGcCounterCount };
struct GcCounters {
  support::ShardedCounters<kGcCounterCount, GcCounters> hot;
  std::atomic<std::uint64_t> leaked_handles{0};
  void add(GcCounter counter, std::uint64_t delta) noexcept { hot.add(counter, delta); }
};
GcCounters& gc_counters() noexcept;

// Hooks of the trace detector (ndgc::trace, src/trace/), installed once by
// its start-up code when a program links it, never removed. The core calls
// them through this table so that programs without ndgc::trace carry no
// Boehm GC at all (docs/design.md §7).
struct TraceHooks {
  void (*enable)();                                // start tracing new keys and `new NDArray`
  void (*disable)();
  void (*collect)();                               // a full collection now; wakes the drain
  void (*on_wake)() noexcept;                      // from the drain: see Note [Drain wake-ups]
  void (*register_thread)() noexcept;              // make this thread's stack visible to the collector
  void* (*new_handle)(std::size_t size) noexcept;  // `new NDArray` while tracing (null: out of memory)
  void (*delete_handle)(void* p) noexcept;         // `delete` of any NDArray made with new
};
void set_trace_hooks(const TraceHooks* hooks) noexcept;
const TraceHooks* trace_hooks() noexcept;

// Note [Reclaims by site]
// debug::set_count_reclaimed(true) installs an observer of the arrays that
// the drain and gc::sweep() close as orphans. Each orphan's creation site and
// size are read while it is pinned, just before the close (after it they are
// gone), and handed to the observer once the close is known to be this
// call's. Off, the whole cost is one relaxed load per reclaim; on, a pin, an
// unpin and the observer's count (debug/reclaimed.cpp).
struct ReclaimedArray {
  Site site;
  std::uint64_t bytes = 0;  // its size (a view's included)
};
using ReclaimObserver = void (*)(const ReclaimedArray& array) noexcept;
extern std::atomic<ReclaimObserver> g_reclaim_observer;
inline ReclaimObserver reclaim_observer() noexcept { return g_reclaim_observer.load(std::memory_order_relaxed); }
// Reads the array in (slot, generation) while pinned; false when it closed meanwhile.
bool read_reclaimed(std::uint32_t slot, std::uint32_t generation, ReclaimedArray& out) noexcept;

// True while gc::enable(Detector::trace) is in force. One relaxed load: the
// whole cost of the trace detector to code paths that test it while it is off.
extern std::atomic<bool> g_tracing;
inline bool tracing() noexcept { return g_tracing.load(std::memory_order_relaxed); }

// Close-site tracking (NDGC_TRACK_CLOSE or debug::set_track_close).
extern std::atomic<bool> g_track_close;
inline bool track_close() noexcept { return g_track_close.load(std::memory_order_relaxed); }

}  // namespace ndgc::detail
