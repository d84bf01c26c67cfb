// The global operator new and delete of a program linked with ndgc::trace:
// every `new` on Boehm's heap, uncollectable but scanned (libgccpp's
// behaviour), so that a handle kept in any standard container or `new`
// object is always seen by the collector (docs/design.md §7).
//
// Ours rather than libgccpp's because each allocation first registers the
// calling thread: a collection that Boehm starts from an allocation on a
// thread it does not know aborts the process. See Note [Thread registration]
// in threads.cpp. On a thread the collector cannot know (registration
// failed, or the thread is ending), collections are held off around the
// allocation. These definitions in the program itself take precedence over
// libstdc++'s and libgccpp's; the nothrow forms are defined too (below), and
// libstdc++'s other forms forward to these. Over-aligned new (alignas > 16) keeps
// libstdc++'s, from the C heap: not scanned.
//
// Key numbers: one thread-local load on top of GC_malloc_uncollectable,
// which takes Boehm's allocation lock (no thread-local fast path for
// uncollectable objects).
#include <new>

#include <gc/gc.h>

#include "trace/threads.hpp"

// Referenced by the start-up code (hooks.cpp), so that a static link always
// takes this object file, whatever order the archives come in.
namespace ndgc::trace::detail {
bool global_new_linked() noexcept { return true; }
}  // namespace ndgc::trace::detail

namespace {

void* allocate(std::size_t size) noexcept {
  ndgc::trace::detail::register_this_thread();
  if (ndgc::trace::detail::thread_known()) [[likely]]
    return GC_malloc_uncollectable(size);
  GC_disable();
  void* p = GC_malloc_uncollectable(size);
  GC_enable();
  return p;
}

void* allocate_or_throw(std::size_t size) {
  for (;;) {
    if (void* p = allocate(size)) return p;
    std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}

}  // namespace

void* operator new(std::size_t size) { return allocate_or_throw(size); }
void* operator new[](std::size_t size) { return allocate_or_throw(size); }
void operator delete(void* p) noexcept { GC_free(p); }
void operator delete[](void* p) noexcept { GC_free(p); }
void operator delete(void* p, std::size_t) noexcept { GC_free(p); }
void operator delete[](void* p, std::size_t) noexcept { GC_free(p); }

// The nothrow forms as well. libstdc++'s forward to the ones above, but an
// interposer of libstdc++'s allocation functions (Valgrind's, under
// tools/check-valgrind) swaps in C-heap ones, whose memory the deletes above
// would hand to GC_free: std::stable_sort's buffer (nothrow new, then a sized
// delete) crashed ndgc-train-trace that way under memcheck.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void operator delete(void* p, const std::nothrow_t&) noexcept { GC_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { GC_free(p); }
