// The reclaim queue and its drain. See Note [Draining at entry points],
// Note [Bounded drains] and Note [Drain hand-off] in reclaim_queue.hpp, and
// Note [Handle counts] in key.hpp.
//
// The head word holds the hidden (bit-inverted) address of the newest key and
// one more fact: whether the drain-flag holder's backlog is non-empty. A
// hidden key address always has bit 0 set (keys are 8-byte aligned), so the
// mark is bit 0 cleared; an empty list with the mark is the value 1. The
// fast path in enter() only asks "is the word non-zero", which covers both.
#include "core/reclaim_queue.hpp"

#include <thread>

#include "core/autoclose.hpp"
#include "core/registry.hpp"

namespace ndgc::detail {

std::atomic<std::uintptr_t> g_reclaim_head{0};

namespace {

constexpr std::uintptr_t kMarkedEmpty = 1;

Key* list_of(std::uintptr_t word) noexcept { return word <= kMarkedEmpty ? nullptr : reveal<Key>(word | 1); }
bool marked(std::uintptr_t word) noexcept { return word == kMarkedEmpty || (word != 0 && !(word & 1)); }
std::uintptr_t encode(Key* list, bool mark) noexcept {
  if (!list) return mark ? kMarkedEmpty : 0;
  return mark ? hide(list) & ~std::uintptr_t{1} : hide(list);
}

std::atomic<bool> g_draining{false};
// drain_now() callers waiting for the flag; entry points step aside for them.
std::atomic<std::uint32_t> g_waiters{0};

// The wake-up sentinel (Note [Drain wake-ups]): never closed, never freed.
constinit Key g_wake_key;
std::atomic<bool> g_wake_queued{false};

// Keys taken from the head that no drain had budget for yet. Touched only by
// the drain-flag holder (the flag's acquire/release orders it).
Key* g_backlog = nullptr;

// Lock-free push of one key; keeps the backlog mark.
// GCC 12 at -O3 takes the store through `key` for a store into an object of
// size 0 (-Wstringop-overflow, a false positive of its atomic builtins);
// silenced for this function alone.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
void push(Key* key) noexcept {
  std::uintptr_t word = g_reclaim_head.load(std::memory_order_relaxed);
  do {
    key->next.store(word, std::memory_order_relaxed);
  } while (!g_reclaim_head.compare_exchange_weak(word, encode(key, marked(word)), std::memory_order_release,
                                                 std::memory_order_relaxed));
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

void set_backlog_mark() noexcept {
  std::uintptr_t word = g_reclaim_head.load(std::memory_order_relaxed);
  while (!marked(word) &&
         !g_reclaim_head.compare_exchange_weak(word, encode(list_of(word), true), std::memory_order_release,
                                               std::memory_order_relaxed)) {
  }
}

struct Progress {
  std::size_t taken = 0;  // keys handled, sentinels included
  std::uint64_t closed = 0, bytes = 0;
  bool woke = false;      // the wake sentinel ran on_wake (finalizers may have queued keys)
};

// Handles keys from the front of `key` until the list ends or `budget` keys
// have been handled; returns the rest of the list.
Key* close_from(Key* key, std::size_t budget, Progress& p) noexcept {
  Registry& reg = Registry::instance();
  while (key && p.taken < budget) {
    Key* next = list_of(key->next.load(std::memory_order_relaxed));
    ++p.taken;
    if (key == &g_wake_key) {
      // Cleared first, so a wake-up asked for while on_wake runs queues it again.
      g_wake_queued.store(false, std::memory_order_release);
      p.woke = true;
      if (const TraceHooks* hooks = trace_hooks()) hooks->on_wake();
      key = next;
      continue;
    }
    // See Note [Leaked keys in the reclaim queue].
    bool leaked = key->strong.load(std::memory_order_acquire) != 0;
    CloseReason why = leaked ? CloseReason::leaked_handle : CloseReason::autoclose;
    const ReclaimObserver observer = leaked ? nullptr : reclaim_observer();  // Note [Reclaims by site]
    ReclaimedArray seen;
    const bool observed = observer && read_reclaimed(key->slot, key->generation, seen);
    CloseResult r = leaked ? reg.request_close(key->slot, key->generation, why, nullptr, nullptr)
                           : reg.close_orphan(key->slot, key->generation);
    if (observed && r.initiated) observer(seen);
    if (r.initiated) ++p.closed;
    p.bytes += r.bytes_freed;
    if (!leaked) {
      release_weak(key);  // the queue's unit
    } else if (key->strong.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      release_weak(key);  // the queue's reference was the last: the strong unit
    }
    key = next;
  }
  return key;
}

// The backlog first, then fresh takes of the head, until `budget` keys are
// handled or nothing is left. Called with the flag held.
void drain_held(std::size_t budget, Progress& p) noexcept {
  while (p.taken < budget) {
    if (!g_backlog) {
      g_backlog = list_of(g_reclaim_head.exchange(0, std::memory_order_acquire));
      if (!g_backlog) break;
      gc_counters().add(kDrains, 1);
    }
    g_backlog = close_from(g_backlog, budget, p);
  }
}

void count(const Progress& p) noexcept {
  GcCounters& c = gc_counters();
  c.add(kReclaimed, p.closed);
  c.add(kReclaimedBytes, p.bytes);
}

// Gives the flag back; the caller then looks at the head again (Note [Drain hand-off]).
void release_flag() noexcept {
  if (g_backlog) set_backlog_mark();  // before the flag: whoever comes next must see work
  g_draining.store(false, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace

void reclaim_queue_push(Key* key) noexcept {
  gc_counters().add(kQueued, 1);
  push(key);
}

void reclaim_queue_wake() noexcept {
  if (g_wake_queued.exchange(true, std::memory_order_acq_rel)) return;  // already queued
  push(&g_wake_key);
}

namespace {

std::uint64_t drain_bounded() noexcept {
  Progress p;
  // The pusher's side of Note [Drain hand-off]: our push (or the one we were
  // told about by the head) is ordered before we read the flag.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  while (p.taken < kDrainBatch) {
    if (g_waiters.load(std::memory_order_relaxed) != 0) break;          // a poller drains it all
    if (g_draining.exchange(true, std::memory_order_acquire)) break;    // the holder will see it
    drain_held(kDrainBatch, p);
    release_flag();
    if (g_reclaim_head.load(std::memory_order_relaxed) == 0) break;
  }
  count(p);
  return p.closed;
}

}  // namespace

void drain_slow() noexcept { drain_bounded(); }

std::uint64_t drain_now() noexcept {
  g_waiters.fetch_add(1, std::memory_order_relaxed);
  while (g_draining.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  g_waiters.fetch_sub(1, std::memory_order_relaxed);
  // Everything orphaned before this call is in the backlog or on the head
  // now: a drain that held the flag meanwhile closed or backlogged what it
  // took. One snapshot of the head, then, and no more, except for the keys
  // that running the collector's finalizers just queued: those belong to
  // this call (gc::collect() promises to close what it found).
  Progress p;
  constexpr std::size_t kAll = ~std::size_t{0};
  if (g_backlog) g_backlog = close_from(g_backlog, kAll, p);
  for (int round = 0; round < 4; ++round) {
    p.woke = false;
    g_backlog = list_of(g_reclaim_head.exchange(0, std::memory_order_acquire));
    if (!g_backlog) break;
    gc_counters().add(kDrains, 1);
    g_backlog = close_from(g_backlog, kAll, p);
    if (!p.woke) break;
  }
  release_flag();
  count(p);
  // Entry points that found us waiting stepped aside (Note [Drain hand-off]):
  // what they pushed after our snapshot is ours to start on, within one batch.
  std::uint64_t more = g_reclaim_head.load(std::memory_order_relaxed) != 0 ? drain_bounded() : 0;
  return p.closed + more;
}

}  // namespace ndgc::detail
