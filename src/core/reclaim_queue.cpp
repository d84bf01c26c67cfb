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

// Closes the arrays of every key in one taken list; returns the count closed.
std::uint64_t close_list(Key* key) noexcept {
  Registry& reg = Registry::instance();
  std::uint64_t closed = 0, bytes = 0;
  while (key) {
    Key* next = reveal<Key>(key->next.load(std::memory_order_relaxed));
    // An array some handle reaches again is impossible (Note [Handle counts]);
    // a leaked-handle key is closed although its count is not zero.
    bool leaked = key->flags.load(std::memory_order_relaxed) & kKeyLeaked;
    if (leaked || key->strong.load(std::memory_order_acquire) == 0) {
      CloseReason why = leaked ? CloseReason::leaked_handle : CloseReason::autoclose;
      CloseResult r = reg.request_close(key->slot, key->generation, why, nullptr, nullptr);
      if (r.initiated) ++closed;
      bytes += r.bytes_freed;
    }
    release_weak(key);  // the queue's unit
    key = next;
  }
  GcCounters& c = gc_counters();
  c.reclaimed.fetch_add(closed, std::memory_order_relaxed);
  c.reclaimed_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return closed;
}

std::uint64_t drain_held() noexcept {
  std::uint64_t closed = 0;
  while (std::uintptr_t head = g_reclaim_head.exchange(0, std::memory_order_acquire)) {
    closed += close_list(reveal<Key>(head));
    gc_counters().drains.fetch_add(1, std::memory_order_relaxed);
  }
  return closed;
}

}  // namespace

void reclaim_queue_push(Key* key) noexcept {
  gc_counters().queued.fetch_add(1, std::memory_order_relaxed);
  std::uintptr_t head = g_reclaim_head.load(std::memory_order_relaxed);
  do {
    key->next.store(head, std::memory_order_relaxed);
  } while (!g_reclaim_head.compare_exchange_weak(head, hide(key), std::memory_order_release,
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
