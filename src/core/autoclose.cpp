// The auto-close switch (gc:: API), its counters and sweep().
//
// The switch is one relaxed atomic bool read by the last handle's destructor
// (key.cpp): flipping it at run time is safe, because a key is either queued
// or released at the moment its count reaches zero, and the drain runs
// whatever the switch says now. sweep() catches the orphans of a time the
// switch was off: it walks every registry slot, pins what is open, and
// closes the arrays whose handle count is zero (Note [Handle counts]).
#include "core/autoclose.hpp"

#include <fmt/format.h>

#include "core/array_impl.hpp"
#include "core/key.hpp"
#include "core/reclaim_queue.hpp"
#include "core/registry.hpp"
#include "ndgc/error.hpp"
#include "support/options.hpp"

namespace ndgc::detail {

std::atomic<bool> g_autoclose{false};
std::atomic<bool> g_track_close{false};
std::atomic<bool> g_tracing{false};
std::atomic<ReclaimObserver> g_reclaim_observer{nullptr};

bool read_reclaimed(std::uint32_t slot, std::uint32_t generation, ReclaimedArray& out) noexcept {
  Registry& reg = Registry::instance();
  if (!reg.try_pin(slot, generation)) return false;
  const ArrayImpl* impl = reg.entry(slot).impl.load(std::memory_order_acquire);
  if (impl) out = ReclaimedArray{impl->site, impl->nbytes()};
  reg.unpin(slot);
  return impl != nullptr;
}

namespace {

std::atomic<const TraceHooks*> g_trace_hooks{nullptr};
std::atomic<gc::Detector> g_detector{gc::Detector::refcount};
std::atomic<bool> g_trace_requested{false};  // NDGC_AUTOCLOSE=trace, not yet applied

// NDGC_AUTOCLOSE=trace needs both the option (read by Startup below) and the
// hooks (registered by the trace library's own static initializer); static
// initialization order between the two is unspecified, so whichever comes
// second applies it.
void apply_trace_request() noexcept {
  const TraceHooks* hooks = g_trace_hooks.load(std::memory_order_acquire);
  if (!hooks || !g_trace_requested.exchange(false)) return;
  hooks->enable();
  g_detector.store(gc::Detector::trace, std::memory_order_relaxed);
  g_tracing.store(true, std::memory_order_relaxed);
  g_autoclose.store(true, std::memory_order_relaxed);
}

// NDGC_AUTOCLOSE and NDGC_TRACK_CLOSE take effect at start-up. A malformed
// value cannot throw from a static initializer; options() throws it again
// from the first call that allocates.
struct Startup {
  Startup() {
    try {
      const support::Options& o = support::options();
      g_track_close.store(o.track_close, std::memory_order_relaxed);
      if (o.autoclose == "on") g_autoclose.store(true, std::memory_order_relaxed);
      if (o.autoclose == "trace") {
        g_trace_requested.store(true, std::memory_order_relaxed);
        apply_trace_request();
      }
    } catch (const Error&) {
    }
  }
} g_startup;

}  // namespace

namespace {
constinit GcCounters g_gc_counters;
}
GcCounters& gc_counters() noexcept { return g_gc_counters; }

void set_trace_hooks(const TraceHooks* hooks) noexcept {
  g_trace_hooks.store(hooks, std::memory_order_release);
  apply_trace_request();
}

const TraceHooks* trace_hooks() noexcept { return g_trace_hooks.load(std::memory_order_acquire); }

}  // namespace ndgc::detail

namespace ndgc::gc {

using namespace ndgc::detail;

void enable(Detector detector) {
  enter();
  if (detector == Detector::trace) {
    const TraceHooks* hooks = trace_hooks();
    if (!hooks)
      throw InvalidArgument(
          "gc::enable(Detector::trace): the trace detector is not in this program; link it with "
          "target_link_libraries(your_target PRIVATE ndgc::trace)");
    hooks->enable();
  } else if (g_detector.load(std::memory_order_relaxed) == Detector::trace) {
    if (const TraceHooks* hooks = trace_hooks()) hooks->disable();
  }
  g_detector.store(detector, std::memory_order_relaxed);
  g_tracing.store(detector == Detector::trace, std::memory_order_relaxed);
  g_autoclose.store(true, std::memory_order_relaxed);
}

void disable() {
  if (g_detector.load(std::memory_order_relaxed) == Detector::trace)
    if (const TraceHooks* hooks = trace_hooks()) hooks->disable();
  g_detector.store(Detector::refcount, std::memory_order_relaxed);
  g_tracing.store(false, std::memory_order_relaxed);
  g_autoclose.store(false, std::memory_order_relaxed);
  enter();
}

bool enabled() noexcept { return autoclose_on(); }
Detector detector() noexcept { return g_detector.load(std::memory_order_relaxed); }

std::uint64_t poll() { return drain_now(); }

std::uint64_t sweep() {
  std::uint64_t closed = drain_now();
  Registry& reg = Registry::instance();
  std::uint64_t swept = 0, bytes = 0;
  for (std::uint32_t slot = 0, n = reg.slot_count(); slot < n; ++slot) {
    std::uint64_t state = reg.entry(slot).state.load(std::memory_order_acquire);
    if (!(state & Registry::kOccupied) || (state & Registry::kClosing)) continue;
    std::uint32_t generation = Registry::generation_of(state);
    if (!reg.try_pin(slot, generation)) continue;
    Key* key = reveal<Key>(reg.entry(slot).key.load(std::memory_order_acquire));
    bool orphan = key->strong.load(std::memory_order_acquire) == 0;
    reg.unpin(slot);
    if (!orphan) continue;
    const ReclaimObserver observer = reclaim_observer();  // Note [Reclaims by site]
    ReclaimedArray seen;
    const bool observed = observer && read_reclaimed(slot, generation, seen);
    CloseResult r = reg.request_close(slot, generation, CloseReason::sweep, nullptr, nullptr);
    if (observed && r.initiated) observer(seen);
    swept += r.initiated;
    bytes += r.bytes_freed;
  }
  GcCounters& c = gc_counters();
  c.add(kSwept, swept);
  c.add(kReclaimed, swept);
  c.add(kReclaimedBytes, bytes);
  return closed + swept;
}

Stats stats() noexcept {
  GcCounters& c = gc_counters();
  Stats s;
  s.queued = c.hot.sum(kQueued);
  s.reclaimed = c.hot.sum(kReclaimed);
  s.reclaimed_bytes = c.hot.sum(kReclaimedBytes);
  s.drains = c.hot.sum(kDrains);
  s.swept = c.hot.sum(kSwept);
  s.leaked_handles = c.leaked_handles.load(std::memory_order_relaxed);
  return s;
}

}  // namespace ndgc::gc
