// The reclaim queue: keys whose last handle died while auto-close was on.
//
// Note [Draining at entry points]
// Producers are handle destructors on any thread: a lock-free push onto an
// intrusive stack (the key's own `next` field; no allocation, so a push is
// also safe from a collector's finalizer). The consumer is whichever thread
// next enters the library: every public entry point calls enter() first,
// which is one relaxed load of the head when the queue is empty. A non-empty
// queue is drained by one thread at a time; a thread that finds another
// draining goes on without waiting, and the drainer re-checks the head after
// it lets go, so nothing pushed meanwhile is left behind.
// Draining happens only at entry points, before the entry point takes any
// library lock or pins any array, so a drain never runs inside another
// operation's critical section. Library code calls internal functions, which
// do not drain.
//
// The head and every link are stored hidden (key.hpp), so a tracing collector
// does not see queued keys as reachable.
//
// Note [Leaked keys in the reclaim queue]
// A queued key is one of two kinds, told apart by its strong count, which is
// exact because strong never rises from 0 (Note [Handle counts]):
//  - strong == 0: an orphan, queued by its last handle; the entry owns the
//    strong references' weak unit.
//  - strong > 0: a leaked handle, queued by the trace detector's finalizer;
//    the entry owns one strong reference that the finalizer took with
//    try_retain. Holding a strong reference (rather than a weak unit) keeps
//    the two kinds from being queued at once: the key's count cannot reach
//    zero, and so its last handle cannot queue it, while the leak entry
//    waits. The drain closes the array (CloseReason::leaked_handle) and drops
//    that reference; if it was the last, the array is closed already, so the
//    strong unit is released directly instead of queueing the key again.
//
// Note [Drain wake-ups]
// The trace detector has work for the drain that no key stands for yet: run
// the collector's pending finalizers (which find leaked keys), or collect
// because the collect window has passed. reclaim_queue_wake() pushes a
// static sentinel key (at most once until a drain takes it), so the next
// enter() on any thread drains; the drain calls TraceHooks::on_wake when it
// meets the sentinel. Waking is lock-free and allocates nothing: the
// collector's finalizer notifier and the finalizers themselves may call it.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/key.hpp"

namespace ndgc::detail {

extern std::atomic<std::uintptr_t> g_reclaim_head;

void reclaim_queue_push(Key* key) noexcept;
// Makes the next enter() drain and the drain run TraceHooks::on_wake.
// See Note [Drain wake-ups].
void reclaim_queue_wake() noexcept;
// Drains if the queue is not empty and nobody else is draining.
void drain_slow() noexcept;
// Drains, waiting for a concurrent drainer first (memory pressure, poll()).
// Returns the number of arrays closed.
std::uint64_t drain_now() noexcept;

inline void enter() noexcept {
  if (g_reclaim_head.load(std::memory_order_relaxed) != 0) drain_slow();
}

}  // namespace ndgc::detail
