// The tracing detector: Boehm GC finds handles that reference counting cannot
// see die (docs/design.md §7). Link ndgc::trace, then:
//
//   gc::enable(gc::Detector::trace);        // or NDGC_AUTOCLOSE=trace
//   auto* lost = new NDArray(m.ones({1024})); // never deleted
//   lost = nullptr;
//   gc::collect();                            // the array is closed, its bytes are back
//   gc::stats().leaked_handles;               // 1
//   for (const trace::LeakSite& s : trace::leak_report())
//     std::printf("%s:%u %llu arrays\n", s.file.c_str(), s.line, (unsigned long long)s.arrays);
//
// What the collector can find unreachable: NDArray objects made with `new`
// while the detector is on, and objects of classes deriving from Collectable,
// cycles among them included. A handle it finds unreachable is a leaked
// handle: its array is closed by the next library call on any thread and
// counted in gc::stats().leaked_handles; the handle's own few bytes are kept,
// so a handle the collector merely could not see (in malloc memory, a
// thread_local, a thread that never called ndgc) throws ArrayClosed on its
// next use instead of crashing. Everything else (handles on the stacks of
// threads that use ndgc, in static data, in any `new` memory: every standard
// container) is always seen. docs/trace.md has the whole story.
//
// This header needs no Boehm GC headers; ndgc.hpp does not include it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

namespace ndgc {

namespace trace::detail {
// Scanned memory that the collector frees once nothing points at it.
void* collectable_allocate(std::size_t size) noexcept;  // null when out of memory
void collectable_free(void* p) noexcept;
}  // namespace trace::detail

// Derive from Collectable to put objects of your class under the collector:
// `new` puts them on its heap, and once no pointer reaches one it is freed
// WITHOUT running its destructor (Boehm's `gc` base class semantics). The
// handles it held are then found unreachable and their arrays closed, cycles
// included. `delete` still works (destructor, then free).
//
//   struct Node : ndgc::Collectable { NDArray value; Node* next = nullptr; };
//   Node* a = new Node{...}; a->next = new Node{...}; a->next->next = a;  // a cycle
//   a = nullptr;  // both nodes and their arrays are reclaimed by a collection
//
// Members that own memory of their own (std::vector, std::string) keep it in
// `new` memory, which is never collected: it leaks with the object and keeps
// whatever it points at reachable. Hold handles directly as members, or in a
// container with CollectableAllocator. Keep pointers to Collectable objects
// where the collector looks (stack, statics, `new` memory, other collectable
// objects), never only in malloc memory.
class Collectable {
 public:
  static void* operator new(std::size_t size) { return allocate(size); }
  static void* operator new[](std::size_t size) { return allocate(size); }
  static void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    return trace::detail::collectable_allocate(size);
  }
  static void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    return trace::detail::collectable_allocate(size);
  }
  static void* operator new(std::size_t, void* where) noexcept { return where; }
  static void* operator new[](std::size_t, void* where) noexcept { return where; }
  static void operator delete(void* p) noexcept { trace::detail::collectable_free(p); }
  static void operator delete[](void* p) noexcept { trace::detail::collectable_free(p); }
  static void operator delete(void* p, const std::nothrow_t&) noexcept { trace::detail::collectable_free(p); }
  static void operator delete[](void* p, const std::nothrow_t&) noexcept { trace::detail::collectable_free(p); }
  static void operator delete(void*, void*) noexcept {}
  static void operator delete[](void*, void*) noexcept {}

 protected:
  Collectable() = default;
  ~Collectable() = default;

 private:
  static void* allocate(std::size_t size) {
    if (void* p = trace::detail::collectable_allocate(size)) return p;
    throw std::bad_alloc();
  }
};

// A standard allocator on the collected heap (Boehm's gc_allocator): for
// containers inside Collectable objects, so that the container's buffer is
// collected with its owner.
//   std::vector<NDArray, CollectableAllocator<NDArray>> parts;
template <class T>
struct CollectableAllocator {
  using value_type = T;
  CollectableAllocator() noexcept = default;
  template <class U>
  CollectableAllocator(const CollectableAllocator<U>&) noexcept {}  // NOLINT
  T* allocate(std::size_t n) {
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    if (void* p = trace::detail::collectable_allocate(n * sizeof(T))) return static_cast<T*>(p);
    throw std::bad_alloc();
  }
  void deallocate(T* p, std::size_t) noexcept { trace::detail::collectable_free(p); }
  template <class U>
  bool operator==(const CollectableAllocator<U>&) const noexcept {
    return true;
  }
};

namespace gc {

// A full collection now, then a drain: arrays whose handles the collector
// found unreachable are closed before it returns (with the detector on).
// Returns the number of arrays the drain closed (orphans included). Works
// with the detector off too (Collectable objects are reclaimed; no array is
// taken for leaked).
std::uint64_t collect();

// Library calls collect at most this often (ND4J's auto-GC window), measured
// from the last collection of any kind; zero leaves collections to Boehm's
// own schedule (driven by allocation), to memory pressure and to collect().
// Default 1000 ms.
void set_collect_window(std::chrono::milliseconds window);
std::chrono::milliseconds collect_window();

}  // namespace gc

namespace trace {

// Leaked handles grouped by the creation site of their arrays, largest first
// (by bytes, then by count). Counts every leaked handle whose array was still
// open when the drain took it since the start or reset_leak_report(). A short
// view of debug::leaked_handles(), which also has the managers, UUIDs and
// JSON; reset_leak_report() resets both.
struct LeakSite {
  std::string file;
  std::uint32_t line = 0;
  std::string function;
  std::uint64_t arrays = 0;  // arrays closed because their handles leaked
  std::uint64_t bytes = 0;   // their sizes (nbytes)
};
std::vector<LeakSite> leak_report();
void reset_leak_report();
// The report as text, one site per line, at most `max_sites` lines.
std::string leak_report_text(std::size_t max_sites = 10);

// Makes the calling thread's stack visible to the collector now. Threads
// register themselves on their first library call or `new`; call this first
// in a thread that may hold handles before either (say, one that receives
// a handle as its argument and waits before using it).
void register_this_thread() noexcept;

struct Stats {
  std::uint64_t collections = 0;      // Boehm's collection count (any trigger)
  std::uint64_t heap_bytes = 0;       // the collector's heap (keys, `new` memory, collectables)
  std::uint64_t finalizers_run = 0;   // finalizers the library's drains ran
  std::uint64_t collect_time_ms = 0;  // time spent in collections the library asked for
};
Stats stats() noexcept;

}  // namespace trace
}  // namespace ndgc
