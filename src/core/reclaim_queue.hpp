// The reclaim queue: keys whose last handle died while auto-close was on.
//
// Note [Draining at entry points]
// Producers are handle destructors on any thread: a lock-free push onto an
// intrusive stack (the key's own `next` field; no allocation, so a push is
// also safe from a collector's finalizer). The consumer is whichever thread
// next enters the library: every public entry point calls enter() first,
// which is one relaxed load of the head when the queue is empty. A non-empty
// queue is drained by one thread at a time; a thread that finds another
// draining goes on without waiting (Note [Drain hand-off] says why nothing
// it pushed is then lost).
// Draining happens only at entry points, before the entry point takes any
// library lock or pins any array, so a drain never runs inside another
// operation's critical section. Library code calls internal functions, which
// do not drain.
//
// Note [Bounded drains]
// A drain at an entry point closes at most kDrainBatch keys and returns, so a
// call pays for a bounded share of the orphans it finds, never for the ones
// other threads keep making while it runs (a drain that looped until the
// queue was empty once held one zeros() call for 3.6 s). Keys it took from
// the head but had no budget for stay in a backlog that only the drain-flag
// holder touches; a sentinel key on the head marks a non-empty backlog, so
// the fast path stays one load of the head. poll(), sweep(), collect(), a
// memory-pressure retry (drain_now) take the flag, waiting for it, and close
// the backlog and one snapshot of the head: everything orphaned before they
// were called, and nothing that other threads orphan afterwards. Threads at
// entry points step aside while one of them waits, so it cannot starve.
//
// Note [Drain hand-off]
// A thread that pushed a key and then finds the flag taken leaves the key to
// the holder; the holder, after it clears the flag, looks at the head again.
// Each side stores to one location and then reads the other (push, then read
// the flag; clear the flag, then read the head): a store followed by a load
// of another location may be reordered, even on x86, and then both sides can
// miss each other and an orphan waits for some unrelated later call. A
// seq_cst fence sits between the two accesses on both sides, so in the
// fences' single total order one of them comes first: either the holder's
// second look sees the key, or the pusher's exchange sees the flag cleared
// and it drains itself. The holder closes what it sees while its budget
// lasts; what remains then is on the head, where the next call on any thread
// finds it (invariant 2).
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
#include <cstddef>
#include <cstdint>

#include "core/key.hpp"

namespace ndgc::detail {

extern std::atomic<std::uintptr_t> g_reclaim_head;

void reclaim_queue_push(Key* key) noexcept;
// Makes the next enter() drain and the drain run TraceHooks::on_wake.
// See Note [Drain wake-ups].
void reclaim_queue_wake() noexcept;
// Keys one entry-point drain closes at most. See Note [Bounded drains]. 64,
// not 512: with 1 to 4 threads orphaning as fast as they can, the worst call
// then takes 0.3-0.6 ms of its thread's CPU time instead of 0.9-1.9 ms
// (perf/bench_drain; perf/RESULTS.md, "Drain latency, second pass"), and the
// 1-thread p99 falls from 215 to 60 µs; the queue still empties, since every
// entry point on every thread drains its batch.
inline constexpr std::size_t kDrainBatch = 64;

// Drains up to kDrainBatch keys if nobody else is draining.
void drain_slow() noexcept;
// Waits for the drain flag, then closes everything queued before the call
// (memory pressure, poll(), sweep(), collect()). Returns the arrays closed.
std::uint64_t drain_now() noexcept;

inline void enter() noexcept {
  if (g_reclaim_head.load(std::memory_order_relaxed) != 0) drain_slow();
}

}  // namespace ndgc::detail
