// Keys: allocation, the weak count and the last-handle hook.
// See Note [Handle counts] in key.hpp.
#include "core/key.hpp"

#include "core/autoclose.hpp"
#include "core/reclaim_queue.hpp"
#include "support/free_list.hpp"

namespace ndgc::detail {
namespace {

// Keys off the collector come from a per-thread free list (Note [Object free
// lists] in support/free_list.hpp); the trace key heap keeps its own path.
using KeyFreeList = support::FreeList<sizeof(Key), Key>;
Key* heap_allocate() {
  void* p = KeyFreeList::allocate();
  return new (p) Key();  // Key() does not throw
}
void heap_free(Key* key) noexcept {
  key->~Key();
  KeyFreeList::free(key);
}
constexpr KeyHeap kDefaultHeap{heap_allocate, heap_free};
std::atomic<const KeyHeap*> g_heap{&kDefaultHeap};

}  // namespace

void set_key_heap(const KeyHeap* heap) noexcept {
  g_heap.store(heap ? heap : &kDefaultHeap, std::memory_order_release);
}

Key* new_key() { return g_heap.load(std::memory_order_acquire)->allocate(); }

void release_weak(Key* key) noexcept {
  if (key->weak.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  delete key->epitaph.load(std::memory_order_relaxed);
  g_heap.load(std::memory_order_acquire)->free(key);
}

bool try_retain(Key* key) noexcept {
  std::uint32_t n = key->strong.load(std::memory_order_relaxed);
  while (n != 0) {
    if (key->strong.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) return true;
  }
  return false;
}

void on_last_handle(KeyHeader* header) noexcept {
  Key* key = static_cast<Key*>(header);
  if (autoclose_on()) {
    reclaim_queue_push(key);  // the strong references' weak unit travels with it
  } else {
    release_weak(key);
  }
}

}  // namespace ndgc::detail
