// Collectable objects: `new NDArray` under the detector, and users' classes
// deriving from Collectable, on Boehm's collected, scanned heap (GC_malloc).
//
// Such an object is freed by the collector once nothing reaches it, without
// its destructor: the handles inside it never drop their counts, so their
// keys become unreachable with strong > 0, and the key finalizer reports
// them as leaked (Note [Keys under the collector] in key_heap.cpp). That is
// how a forgotten `new NDArray` and a cycle of Collectables are found.
//
// `delete` of an NDArray made with `new` works whatever heap it came from:
// the detector may have been switched on or off in between. Both are
// Boehm's in a program linked with ndgc::trace (global_new.cpp puts all
// other `new` memory there, uncollectable), so GC_free fits both.
#include "trace/object_heap.hpp"

#include <new>

#include <gc/gc.h>

#include "ndgc/trace.hpp"
#include "trace/collector.hpp"
#include "trace/threads.hpp"

namespace ndgc::trace::detail {

void* new_handle(std::size_t size) noexcept {
  register_this_thread();
  void* p = GC_malloc(size);
  poke();
  return p;
}

void delete_handle(void* p) noexcept { GC_free(p); }

void* collectable_allocate(std::size_t size) noexcept {
  register_this_thread();  // the collector must see this thread's pointers to it
  return GC_malloc(size);
}

void collectable_free(void* p) noexcept { GC_free(p); }

}  // namespace ndgc::trace::detail
