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
// Then the finalizer keeps the key: it puts it in the kept set, a hash set
// in scanned memory, from which the collector reaches it from then on, so it
// is neither reclaimed nor finalized again. It skips that once the library
// has let go of the key (kKeyFreed).
//
// Why a set and not re-registering the finalizer (which also keeps the
// memory): a re-registered key that nothing reaches is finalized again by
// every collection, and re-registering can itself collect (Boehm collects
// before growing its finalizer table, GC_grow_table). Under load that fed
// GC_invoke_finalizers its own output: one drain ran finalizers and
// collections without end (measured: the multi-threaded forced-collection
// test hung in about one run in six, with the drain's thread collecting
// from GC_register_finalizer inside GC_invoke_finalizers). A kept key costs
// one set node and is looked at again only when it is freed. The finalizer
// takes the set's lock and allocates: safe, because finalizers run on
// demand, from the drain at a library entry, never inside an allocation or
// under a library lock (collector.cpp); the collector never takes the lock.
// If the node cannot be allocated, the finalizer re-registers instead.
//
// Keys found unreachable while the detector is off are kept the same way
// and never looked at again: the detector reports only what it sees while on.
//
// Freeing (release_weak reached zero, on any thread) races with the
// finalizer, which may be queued or running on the drain's thread. free_key
// first unregisters the finalizer under Boehm's lock and looks at what was
// there:
//  - a finalizer was registered: none is queued or running, and none can
//    start (it is gone): GC_free now.
//  - none: the finalizer has run and kept the key, or it is queued or
//    running. Under the set's lock: a kept key is taken out and freed;
//    otherwise free_key sets kKeyFreed and leaves the key to the collector:
//    the finalizer sees the flag under the same lock and neither keeps nor
//    re-registers it, so the next collection reclaims it. The finalizer's
//    own frame holds the key while it runs, so the memory stays valid.
// A reference the leak entry holds keeps weak above zero while the entry
// waits, so a queued key is never freed either.
#include "trace/key_heap.hpp"

#include <mutex>
#include <new>
#include <unordered_set>

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

void register_finalizer(Key* key) noexcept {
  GC_register_finalizer_no_order(key, &finalize_key, nullptr, nullptr, nullptr);
}

// The kept set and its lock. The set lives in `new` memory (uncollectable
// and scanned, global_new.cpp) and is never destroyed: keys may be freed
// during static destruction.
std::mutex g_kept_mu;
std::unordered_set<Key*>& kept() {
  static auto* set = new std::unordered_set<Key*>();
  return *set;
}

// Keeps a finalized key that the library still needs (see the Note).
void keep(Key* key) noexcept {
  std::lock_guard lock(g_kept_mu);
  if (key->flags.load(std::memory_order_acquire) & kKeyFreed) return;  // the collector reclaims it
  try {
    kept().insert(key);
  } catch (const std::bad_alloc&) {
    register_finalizer(key);  // no node: the finalizer's registration keeps it instead
  }
}

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
  keep(key);
}

Key* allocate_key() {
  if (!ndgc::detail::tracing()) return new Key();
  register_this_thread();
  void* p = GC_malloc_atomic(sizeof(Key));
  if (!p) throw std::bad_alloc();
  Key* key = new (p) Key();
  key->flags.store(kKeyTraced, std::memory_order_relaxed);
  register_finalizer(key);
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
  if (!old) {
    std::lock_guard lock(g_kept_mu);
    if (kept().erase(key) == 0) {
      key->flags.fetch_or(kKeyFreed, std::memory_order_acq_rel);  // its finalizer is queued or running
      return;
    }
  }
  GC_free(key);
}

}  // namespace

const ndgc::detail::KeyHeap kTraceKeyHeap{&allocate_key, &free_key};

}  // namespace ndgc::trace::detail
