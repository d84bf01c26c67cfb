// Keys on the collector's heap, with no-order finalizers: how the trace
// detector learns that no handle reaches a key any more.
//
// Note [Keys under the collector]
// While the detector is on, a key is allocated atomic (GC_malloc_atomic: the
// collector never scans a key's words, so its UUID's random bits retain
// nothing, and its `next` link and epitaph pointer need no hiding) with a
// no-order finalizer. The library's own references to keys are hidden
// (registry, reclaim queue, leak list), so the only pointers the collector
// can see are handles' (NDArray::key_). When it finds a key unreachable it
// queues the finalizer; the drain runs it (collector.cpp). The finalizer
// never frees the key: the key's memory is governed by the weak count
// (Note [Handle counts]) and the finalizer only decides whether to keep it
// away from the collector.
//  - strong > 0: handles exist that the collector cannot see: leaked (in a
//    forgotten `new NDArray` or a dead Collectable) or hidden (malloc
//    memory, a thread_local, an unregistered thread's stack). The finalizer
//    takes a strong reference with try_retain, marks the key kKeyLeaked
//    (once), counts it and queues it with that reference (Note [Leaked keys
//    in the reclaim queue]); the drain closes the array. A hidden handle
//    then throws ArrayClosed on use; it is never left dangling, because the
//    key is kept (below) until its weak count says otherwise.
//  - strong == 0: an orphan: its array is queued or already closed. Nothing
//    to do but keep the key while the registry or the queue still hold weak
//    units.
// Then the finalizer re-registers itself, which is what keeps the memory: a
// registered object is never reclaimed, and a finalized one is reclaimed by
// the next collection that finds it unreachable. It skips that only once the
// library has let go of the key (kKeyFreed).
//
// Freeing (release_weak reached zero, on any thread) races with the
// finalizer, which may be queued or running on the drain's thread. free_key
// unregisters the finalizer under Boehm's lock and looks at what was there:
//  - a finalizer was registered: no finalizer is queued or running, and none
//    can start (it is gone): GC_free now.
//  - none: the collector has queued it, or it is running. The memory stays
//    valid until the finalizer is done, so set kKeyFreed and let the
//    collector reclaim the key: the finalizer sees the flag and does not
//    re-register, or, if it re-registered just before the flag was set, the
//    next collection runs it again and it sees the flag then.
// Either way the finalizer touches the key only before its final
// re-registration, and free_key frees it only while it is registered, so
// the key is never used after it is freed. A reference the leak entry holds
// keeps weak above zero while the entry waits, so a queued key is never
// freed either.
#include "trace/key_heap.hpp"

#include <cstdlib>
#include <new>

#include <gc/gc.h>

#include "core/autoclose.hpp"
#include "core/reclaim_queue.hpp"
#include "trace/collector.hpp"
#include "trace/leak_list.hpp"
#include "trace/threads.hpp"

namespace ndgc::trace::detail {

using ndgc::detail::Key;
using ndgc::detail::kKeyFreed;
using ndgc::detail::kKeyLeaked;
using ndgc::detail::kKeyTraced;

namespace {

void GC_CALLBACK finalize_key(void* obj, void* client_data);

void keep(Key* key) noexcept { GC_register_finalizer_no_order(key, &finalize_key, nullptr, nullptr, nullptr); }

void GC_CALLBACK finalize_key(void* obj, void*) {
  Key* key = static_cast<Key*>(obj);
  if (key->flags.load(std::memory_order_acquire) & kKeyFreed) return;
  if (ndgc::detail::tracing() && ndgc::detail::try_retain(key)) {
    if (!(key->flags.fetch_or(kKeyLeaked, std::memory_order_acq_rel) & kKeyLeaked)) {
      ndgc::detail::gc_counters().leaked_handles.fetch_add(1, std::memory_order_relaxed);
      push_leaked(key);  // our reference travels with it
    } else if (key->strong.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      ndgc::detail::on_last_handle(key);  // its other handles died meanwhile
    }
  }
  if (key->flags.load(std::memory_order_acquire) & kKeyFreed) return;
  keep(key);
}

Key* allocate_key() {
  if (!ndgc::detail::tracing()) return new Key();
  register_this_thread();
  void* p = GC_malloc_atomic(sizeof(Key));
  if (!p) throw std::bad_alloc();
  Key* key = new (p) Key();
  key->flags.store(kKeyTraced, std::memory_order_relaxed);
  keep(key);
  poke();
  return key;
}

void free_key(Key* key) noexcept {
  if (!(key->flags.load(std::memory_order_relaxed) & kKeyTraced)) {
    delete key;
    return;
  }
  GC_finalization_proc old = nullptr;
  void* old_data = nullptr;
  GC_register_finalizer_no_order(key, nullptr, nullptr, &old, &old_data);
  if (old) {
    if (!std::getenv("NOFREE")) GC_free(key);
  } else {
    key->flags.fetch_or(kKeyFreed, std::memory_order_acq_rel);
  }
}

}  // namespace

const ndgc::detail::KeyHeap kTraceKeyHeap{&allocate_key, &free_key};

}  // namespace ndgc::trace::detail
