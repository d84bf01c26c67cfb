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
#pragma once

#include <atomic>
#include <cstdint>

#include "core/key.hpp"

namespace ndgc::detail {

extern std::atomic<std::uintptr_t> g_reclaim_head;

void reclaim_queue_push(Key* key) noexcept;
// Drains if the queue is not empty and nobody else is draining.
void drain_slow() noexcept;
// Drains, waiting for a concurrent drainer first (memory pressure, poll()).
// Returns the number of arrays closed.
std::uint64_t drain_now() noexcept;

inline void enter() noexcept {
  if (g_reclaim_head.load(std::memory_order_relaxed) != 0) drain_slow();
}

}  // namespace ndgc::detail
