// Keys: what a handle points at (docs/design.md §3).
//
// A key is an array's identity for the handles that reach it: the handle
// count, the UUID, and the registry slot and generation that resolve it to
// the ArrayImpl. 48 bytes. Keys live as long as a handle or the open array
// needs them; after the array closes, a key that handles still reach carries
// an Epitaph (name, shape, how and where it closed) for ArrayClosed messages.
//
// Note [Handle counts]
// A key has two counts, after c10::intrusive_ptr's strong/weak pair:
//  - strong: live handles (NDArray objects), the user's and the library's.
//  - weak: owners of the key's memory: one unit for the registry entry while
//    the array is open, plus one unit that the strong references own together
//    while strong > 0.
// When the last handle dies (strong 1 → 0) the strong unit either goes to the
// reclaim queue with the key (auto-close on) or is released at once (off).
// The key's memory is freed when weak reaches 0.
// strong never goes from 0 back up: copying needs a live handle, and handles
// the library makes from the registry (managed_arrays) use try_retain, which
// increments only if not zero. So an orphan stays an orphan, and a drain or a
// sweep may close it without racing a resurrection. See Note [Close protocol]
// in registry.hpp for how closing itself stays safe against concurrent use.
//
// Note [Metadata in the key]
// A handle method that only reads what never changes after publication
// (shape, dtype, device, and what derives from them) reads it from the key,
// which its own handle keeps alive, after one acquire load of the registry
// state confirms the array is open. Pinning instead costs two locked
// read-modify-writes (~10 ns here); the copy costs 72 bytes per key and is
// also what ArrayClosed messages print for a closed array.
// The trace detector queues a key whose handles it found unreachable with one
// strong reference of its own (taken with try_retain), not a weak unit; see
// Note [Leaked keys in the reclaim queue] in reclaim_queue.hpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "ndgc/device.hpp"
#include "ndgc/dtype.hpp"
#include "ndgc/ndarray.hpp"
#include "ndgc/shape.hpp"
#include "ndgc/uuid.hpp"

namespace ndgc::detail {

enum class CloseReason : std::uint8_t { explicit_close, manager, scope, autoclose, sweep, leaked_handle, workspace };

// Note [Close sites]
// With close tracking on, every path that closes an array says where, and a
// use after close prints it: close() and ManagerRef::close() pass the
// caller's line ("at file:line"); the other paths describe themselves (an
// NDScope: "opened at file:line"; an NDManager's destructor: "when NDManager
// 'app' (created at file:line) was destroyed"); the reclaim drain and
// gc::sweep() are named by their CloseReason alone. The text is composed only
// when an epitaph is (tracking on and a handle outlives the array), so a path
// pays nothing for it otherwise. A new close path plugs in its own describe
// function, e.g. a workspace: {nullptr, &describe_recycle, &cycle_info} →
// "when workspace 'W' recycled cycle 7".
struct CloseSite {
  const Site* site = nullptr;                                  // printed "at file:line"
  std::string (*describe)(const void* context) = nullptr;      // used when `site` is null
  const void* context = nullptr;

  static CloseSite at(const Site& s) noexcept { return {&s, nullptr, nullptr}; }
  // The words after the reason in "array … was closed <reason> <text>".
  std::string text() const;
};

// How a closed array was named and closed, for the handles that outlive it
// (its shape and dtype stay in the key).
struct Epitaph {
  std::string name;
  std::string manager;  // path of the manager it belonged to
  CloseReason reason = CloseReason::explicit_close;
  std::string where;    // CloseSite::text() when close tracking was on; see Note [Close sites]
  bool tracked = false; // close tracking was on when it closed
  std::string detail;   // CloseReason::workspace: which workspace, which cycle
};

struct Key : KeyHeader {
  std::atomic<std::uint32_t> weak{2};
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;
  std::atomic<std::uint8_t> flags{0};  // kKey* below
  Uuid uuid;
  std::atomic<std::uintptr_t> next{0};  // reclaim queue link, hidden (see hide())
  std::atomic<Epitaph*> epitaph{nullptr};
  // The array's fixed metadata, copied here when it is published, so that
  // shape(), dtype() and friends need no pin (Note [Metadata in the key]).
  DataType dtype = DataType::float32;
  Device device;
  Shape shape;
};
// The trace detector found the key unreachable while handles still counted
// on it (src/trace/key_heap.cpp); set once, by its finalizer.
inline constexpr std::uint8_t kKeyLeaked = 1;
// Allocated on the collector's heap with a finalizer (the trace key heap),
// and the library has let go of it there. See Note [Keys under the collector]
// in src/trace/key_heap.cpp.
inline constexpr std::uint8_t kKeyTraced = 2;
inline constexpr std::uint8_t kKeyFreed = 4;

inline Key* key_of(const NDArray& a) noexcept { return static_cast<Key*>(a.key()); }

// Where keys come from. The trace detector swaps in Boehm's collected heap.
struct KeyHeap {
  Key* (*allocate)();
  void (*free)(Key*) noexcept;
};
void set_key_heap(const KeyHeap* heap) noexcept;

Key* new_key();                          // strong = 1, weak = 2
void release_weak(Key* key) noexcept;    // frees the key at zero
bool try_retain(Key* key) noexcept;      // strong += 1 unless it is 0
// A handle for `key` if some handle still reaches it; empty otherwise.
inline NDArray try_handle(Key* key) noexcept {
  return key && try_retain(key) ? NDArray::adopt(key) : NDArray();
}

// Pointers to keys that the library keeps are stored hidden (bit-inverted),
// so a tracing collector never mistakes them for references (docs/design.md §7).
inline std::uintptr_t hide(const void* p) noexcept {
  return p ? ~reinterpret_cast<std::uintptr_t>(p) : 0;
}
template <class T>
inline T* reveal(std::uintptr_t hidden) noexcept {
  return hidden ? reinterpret_cast<T*>(~hidden) : nullptr;
}

}  // namespace ndgc::detail
