// The auto-close switch and its counters, shared by the handle destructor
// (key.cpp), the drain (reclaim_queue.cpp) and the gc:: API (autoclose.cpp).
#pragma once

#include <atomic>
#include <cstdint>

#include "ndgc/gc.hpp"

namespace ndgc::detail {

extern std::atomic<bool> g_autoclose;
inline bool autoclose_on() noexcept { return g_autoclose.load(std::memory_order_relaxed); }

struct GcCounters {
  std::atomic<std::uint64_t> queued{0}, reclaimed{0}, reclaimed_bytes{0}, drains{0}, swept{0},
      leaked_handles{0};
};
GcCounters& gc_counters() noexcept;

// Hooks of the trace detector (ndgc::trace), installed when it is linked.
struct TraceHooks {
  void (*enable)();              // start tracing keys
  void (*disable)();
  void (*collect)();             // a full collection; finalizers queue leaked keys
  void (*maybe_collect)();       // collect if the collect window has passed
  void (*register_thread)();     // make this thread's stack visible to the collector
};
void set_trace_hooks(const TraceHooks* hooks) noexcept;
const TraceHooks* trace_hooks() noexcept;

// Close-site tracking (NDGC_TRACK_CLOSE or debug::set_track_close).
extern std::atomic<bool> g_track_close;
inline bool track_close() noexcept { return g_track_close.load(std::memory_order_relaxed); }

}  // namespace ndgc::detail
