// The leak list: keys whose handles the collector found unreachable, between
// their finalizer and the reclaim queue.
//
// A finalizer may not allocate or take locks (docs/design.md §7), but the leak
// report wants each array's creation site, which needs a pin and a map
// insert. So the finalizer pushes onto this intrusive stack (the key's own
// hidden `next` link, as the reclaim queue does; a key is on at most one of
// the two at a time) and wakes the drain; the drain records the site and
// moves the key on. Thread-safety: multi-producer push, one consumer at a
// time (the drain).
#include "trace/leak_list.hpp"

#include <atomic>
#include <cstdint>

#include "core/reclaim_queue.hpp"
#include "trace/leak_report.hpp"

namespace ndgc::trace::detail {
namespace {

std::atomic<std::uintptr_t> g_leaked_head{0};  // hidden Key*, like every key pointer the library keeps

}  // namespace

void push_leaked(ndgc::detail::Key* key) noexcept {
  // hide() before the loop: inside it, its null branch let GCC 12 (-O3
  // -march=native) thread a path with a null key into the store below and
  // warn (-Wstringop-overflow) about a store no run makes.
  const std::uintptr_t hidden = ndgc::detail::hide(key);
  std::uintptr_t head = g_leaked_head.load(std::memory_order_relaxed);
  do {
    key->next.store(head, std::memory_order_relaxed);
  } while (!g_leaked_head.compare_exchange_weak(head, hidden, std::memory_order_release, std::memory_order_relaxed));
  ndgc::detail::reclaim_queue_wake();
}

void forward_leaked() noexcept {
  using ndgc::detail::Key;
  Key* key = ndgc::detail::reveal<Key>(g_leaked_head.exchange(0, std::memory_order_acquire));
  while (key) {
    Key* next = ndgc::detail::reveal<Key>(key->next.load(std::memory_order_relaxed));
    record_leak(*key);
    ndgc::detail::reclaim_queue_push(key);
    key = next;
  }
}

}  // namespace ndgc::trace::detail
