// The reclaim queue and its drain. See Note [Draining at entry points] in
// reclaim_queue.hpp and Note [Handle counts] in key.hpp.
#include "core/reclaim_queue.hpp"

#include <thread>

#include "core/autoclose.hpp"
#include "core/registry.hpp"

namespace ndgc::detail {

std::atomic<std::uintptr_t> g_reclaim_head{0};

namespace {

std::atomic<bool> g_draining{false};

// The wake-up sentinel (Note [Drain wake-ups]): never closed, never freed.
constinit Key g_wake_key;
std::atomic<bool> g_wake_queued{false};

// Closes the arrays of every key in one taken list; returns the count closed.
std::uint64_t close_list(Key* key) noexcept {
  Registry& reg = Registry::instance();
  std::uint64_t closed = 0, bytes = 0;
  while (key) {
    Key* next = reveal<Key>(key->next.load(std::memory_order_relaxed));
    if (key == &g_wake_key) {
      // Cleared first, so a wake-up asked for while on_wake runs queues it again.
      g_wake_queued.store(false, std::memory_order_release);
      if (const TraceHooks* hooks = trace_hooks()) hooks->on_wake();
      key = next;
      continue;
    }
    // See Note [Leaked keys in the reclaim queue].
    bool leaked = key->strong.load(std::memory_order_acquire) != 0;
    CloseReason why = leaked ? CloseReason::leaked_handle : CloseReason::autoclose;
    CloseResult r = leaked ? reg.request_close(key->slot, key->generation, why, nullptr, nullptr)
                           : reg.close_orphan(key->slot, key->generation);
    if (r.initiated) ++closed;
    bytes += r.bytes_freed;
    if (!leaked) {
      release_weak(key);  // the queue's unit
    } else if (key->strong.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      release_weak(key);  // the queue's reference was the last: the strong unit
    }
    key = next;
  }
  GcCounters& c = gc_counters();
  c.add(kReclaimed, closed);
  c.add(kReclaimedBytes, bytes);
  return closed;
}

std::uint64_t drain_held() noexcept {
  std::uint64_t closed = 0;
  while (std::uintptr_t head = g_reclaim_head.exchange(0, std::memory_order_acquire)) {
    closed += close_list(reveal<Key>(head));
    gc_counters().add(kDrains, 1);
  }
  return closed;
}

}  // namespace

void reclaim_queue_push(Key* key) noexcept {
  gc_counters().add(kQueued, 1);
  std::uintptr_t head = g_reclaim_head.load(std::memory_order_relaxed);
  do {
    key->next.store(head, std::memory_order_relaxed);
  } while (!g_reclaim_head.compare_exchange_weak(head, hide(key), std::memory_order_release,
                                                 std::memory_order_relaxed));
}

void reclaim_queue_wake() noexcept {
  if (g_wake_queued.exchange(true, std::memory_order_acq_rel)) return;  // already queued
  std::uintptr_t head = g_reclaim_head.load(std::memory_order_relaxed);
  do {
    g_wake_key.next.store(head, std::memory_order_relaxed);
  } while (!g_reclaim_head.compare_exchange_weak(head, hide(&g_wake_key), std::memory_order_release,
                                                 std::memory_order_relaxed));
}

void drain_slow() noexcept {
  // Re-check after letting go: a push that lands between our last exchange
  // and the release would otherwise wait for the next call.
  while (g_reclaim_head.load(std::memory_order_relaxed) != 0) {
    if (g_draining.exchange(true, std::memory_order_acquire)) return;  // someone else drains
    drain_held();
    g_draining.store(false, std::memory_order_release);
  }
}

std::uint64_t drain_now() noexcept {
  std::uint64_t closed = 0;
  for (;;) {
    while (g_draining.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
    closed += drain_held();
    g_draining.store(false, std::memory_order_release);
    if (g_reclaim_head.load(std::memory_order_relaxed) == 0) return closed;
  }
}

}  // namespace ndgc::detail
