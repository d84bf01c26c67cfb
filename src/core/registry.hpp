// The registry: the process-wide weak map from keys to arrays (docs/design.md §3).
//
// A generational slot map. A slot is an index into chunks of Entry that are
// allocated once and never freed, so an entry can be read at any time without
// a lock. An entry holds the open array (ArrayImpl*), its key (hidden) and a
// 64-bit state word: [generation:32][closing:1][occupied:1][pins:30].
// The generation changes each time the slot's array closes; a key records the
// generation it was made with, so resolving a handle is O(1): index the slot,
// compare the generation. Up to 2^28 arrays can be open at once.
//
// Note [Close protocol]
// Using an array (reading metadata or data, moving it between managers) pins
// it: a CAS that adds one to `pins` if the generation matches, the slot is
// occupied and not closing; otherwise the handle is stale (ArrayClosed).
// Closing sets `closing`, which makes every later pin fail, and the thread
// that brings pins to zero with `closing` set finalizes: unlinks the array
// from its manager, clears the entry, bumps the generation and frees the
// ArrayImpl (whose storage goes back to the allocator when its last view
// closes). A closer pins first, so it finalizes at once when nobody else is
// using the array; otherwise the last user's unpin does, after its op. No
// thread ever waits for another, so closing a manager while other threads
// compute with its arrays cannot deadlock and never frees memory in use.
// Pins never modify a state they fail on, so once `closing` is set nothing
// but unpins touches the word until the finalizer owns it.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "core/autoclose.hpp"
#include "core/key.hpp"

namespace ndgc::detail {

class ArrayImpl;
class ManagerImpl;

struct Entry {
  std::atomic<std::uint64_t> state{0};
  std::atomic<ArrayImpl*> impl{nullptr};
  std::atomic<std::uintptr_t> key{0};  // hidden Key*
  std::atomic<std::uint32_t> next_free{0};
};

struct CloseResult {
  bool initiated = false;          // this call set `closing`
  std::uint64_t bytes_freed = 0;   // buffer bytes freed if it finalized here
};

class Registry {
 public:
  static constexpr std::uint64_t kPinMask = (1ull << 30) - 1;
  static constexpr std::uint64_t kOccupied = 1ull << 30;
  static constexpr std::uint64_t kClosing = 1ull << 31;
  static std::uint32_t generation_of(std::uint64_t state) noexcept { return std::uint32_t(state >> 32); }

  // The one registry: a constant-initialized global (no guard on access,
  // nothing to destroy at exit; its chunks are never freed).
  static Registry& instance() noexcept;
  constexpr Registry() = default;

  // Publishes `impl` (fully built) and returns its new key (strong = 1);
  // fills impl->slot, generation and uuid.
  Key* insert(ArrayImpl* impl);

  Entry& entry(std::uint32_t slot) noexcept {
    return chunks_[slot >> kChunkBits].load(std::memory_order_acquire)[slot & (kChunkSize - 1)];
  }
  // Slots handed out so far; every slot below is a valid entry() index.
  std::uint32_t slot_count() const noexcept { return slot_count_.load(std::memory_order_acquire); }

  // Any (slot, generation), e.g. from a scan: checks the slot is in range.
  bool try_pin(std::uint32_t slot, std::uint32_t generation) noexcept {
    return slot < slot_count() && try_pin_valid(slot, generation);
  }
  // A (slot, generation) taken from a key: the slot is known to be valid.
  bool try_pin_valid(std::uint32_t slot, std::uint32_t generation) noexcept {
    Entry& e = entry(slot);
    std::uint64_t s = e.state.load(std::memory_order_acquire);
    for (;;) {
      if (generation_of(s) != generation || (s & kClosing) || !(s & kOccupied)) return false;
      if (e.state.compare_exchange_weak(s, s + 1, std::memory_order_acquire, std::memory_order_acquire))
        return true;
    }
  }
  // The last unpin of a closing array finalizes it.
  void unpin(std::uint32_t slot) noexcept {
    std::uint64_t prev = entry(slot).state.fetch_sub(1, std::memory_order_acq_rel);
    if ((prev & kClosing) && (prev & kPinMask) == 1) finalize(slot, nullptr);
  }
  // True when the array of (slot, generation) is open and not closing.
  bool is_open(std::uint32_t slot, std::uint32_t generation) const noexcept {
    return slot < slot_count() && is_open_valid(slot, generation);
  }
  bool is_open_valid(std::uint32_t slot, std::uint32_t generation) const noexcept {
    std::uint64_t s = const_entry(slot).state.load(std::memory_order_acquire);
    return generation_of(s) == generation && (s & kOccupied) && !(s & kClosing);
  }

  // Closes the array of (slot, generation) if it is open; see Note [Close
  // protocol]. `site`: where the close was asked for (close tracking; null:
  // the reason alone says it, see Note [Close sites] in key.hpp).
  // `locked`: a manager whose mutex the caller holds (manager close).
  CloseResult request_close(std::uint32_t slot, std::uint32_t generation, CloseReason reason,
                            const CloseSite* site, ManagerImpl* locked) noexcept;

  // Closes an array no handle reaches (the drain's common case): one CAS
  // from "open, unpinned" to "closing", then finalize. Falls back to
  // request_close when someone holds a pin (a scan), so the protocol is the same.
  CloseResult close_orphan(std::uint32_t slot, std::uint32_t generation) noexcept;

  std::uint64_t open_arrays() const noexcept { return open_.load(std::memory_order_relaxed); }

 private:
  static constexpr std::uint32_t kChunkBits = 12;
  static constexpr std::uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr std::uint32_t kMaxChunks = 1u << 16;

  std::uint32_t acquire_slot();
  void release_slot(std::uint32_t slot) noexcept;
  std::uint64_t finalize(std::uint32_t slot, ManagerImpl* locked) noexcept;
  Entry& const_entry(std::uint32_t slot) const noexcept {
    return chunks_[slot >> kChunkBits].load(std::memory_order_acquire)[slot & (kChunkSize - 1)];
  }

  std::atomic<Entry*> chunks_[kMaxChunks] = {};
  std::atomic<std::uint32_t> slot_count_{0};
  std::atomic<std::uint64_t> free_head_{0};  // [tag:32][slot + 1:32]; 0 in the low half: empty
  std::atomic<std::uint64_t> open_{0};
  std::mutex grow_mu_;
};

// RAII pin of the array a handle reaches. Throws InvalidArgument for an empty
// handle and ArrayClosed (naming the array and, when tracked, where it closed)
// for a stale one; `op` names the operation in those messages.
class Pinned {
 public:
  Pinned(const NDArray& array, const char* op);
  Pinned(Pinned&& other) noexcept : impl_(other.impl_), slot_(other.slot_) { other.impl_ = nullptr; }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  ~Pinned() {
    if (impl_) Registry::instance().unpin(slot_);
  }
  ArrayImpl& operator*() const noexcept { return *impl_; }
  ArrayImpl* operator->() const noexcept { return impl_; }
  ArrayImpl* get() const noexcept { return impl_; }

 private:
  ArrayImpl* impl_;
  std::uint32_t slot_;
};

[[noreturn]] void throw_closed(const Key* key, const char* op);
[[noreturn]] void throw_empty(const char* op);

extern constinit Registry g_registry;
inline Registry& Registry::instance() noexcept { return g_registry; }

// A thread that uses handles must have its stack scanned by the trace
// detector (docs/design.md §7): it registers on its first use. One relaxed load
// while the detector is off.
inline void note_thread_for_trace() noexcept {
  if (tracing()) [[unlikely]]
    trace_hooks()->register_thread();
}

inline Pinned::Pinned(const NDArray& array, const char* op) {
  Key* key = key_of(array);
  if (!key) throw_empty(op);
  note_thread_for_trace();
  if (!g_registry.try_pin_valid(key->slot, key->generation)) throw_closed(key, op);
  slot_ = key->slot;
  impl_ = g_registry.entry(slot_).impl.load(std::memory_order_acquire);
}

// The key of an open array, for the metadata it carries (Note [Metadata in
// the key] in key.hpp): ArrayClosed or InvalidArgument as Pinned would.
inline const Key& open_key(const NDArray& array, const char* op) {
  const Key* key = key_of(array);
  if (!key) throw_empty(op);
  note_thread_for_trace();
  if (!g_registry.is_open_valid(key->slot, key->generation)) throw_closed(key, op);
  return *key;
}

}  // namespace ndgc::detail
