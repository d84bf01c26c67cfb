// Keys: allocation, the weak count and the last-handle hook.
// See Note [Handle counts] in key.hpp.
#include "core/key.hpp"

#include "core/autoclose.hpp"
#include "core/reclaim_queue.hpp"

namespace ndgc::detail {
namespace {

Key* heap_allocate() { return new Key(); }
void heap_free(Key* key) noexcept { delete key; }
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
