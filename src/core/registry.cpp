// The registry: slot allocation, pins and the close protocol.
// See Note [Close protocol] in registry.hpp and Note [Handle counts] in key.hpp.
#include "core/registry.hpp"

#include <new>

#include <fmt/format.h>

#include "core/array_impl.hpp"
#include "core/autoclose.hpp"
#include "core/manager_impl.hpp"
#include "core/workspace_arrays.hpp"
#include "ndgc/error.hpp"

namespace ndgc::detail {

// Constant-initialized and trivially destructible: usable from any static
// initializer and still there for handles destroyed at exit.
constinit Registry g_registry;

std::uint32_t Registry::acquire_slot() {
  // A Treiber stack of free slots; the tag in the high half defeats ABA.
  std::uint64_t head = free_head_.load(std::memory_order_acquire);
  while (std::uint32_t top = std::uint32_t(head)) {
    std::uint32_t slot = top - 1;
    std::uint32_t next = entry(slot).next_free.load(std::memory_order_relaxed);
    std::uint64_t tag = (head >> 32) + 1;
    if (free_head_.compare_exchange_weak(head, (tag << 32) | next, std::memory_order_acquire))
      return slot;
  }
  std::uint32_t slot = slot_count_.load(std::memory_order_relaxed);
  std::lock_guard lock(grow_mu_);
  slot = slot_count_.load(std::memory_order_relaxed);
  std::uint32_t chunk = slot >> kChunkBits;
  if (chunk >= kMaxChunks)
    throw OutOfMemory(fmt::format("Registry: {} arrays are open, the most ndgc can hold; close some", slot), 0,
                      0, 0);
  if (!chunks_[chunk].load(std::memory_order_relaxed))
    chunks_[chunk].store(new Entry[kChunkSize], std::memory_order_release);
  slot_count_.store(slot + 1, std::memory_order_release);
  return slot;
}

void Registry::release_slot(std::uint32_t slot) noexcept {
  Entry& e = entry(slot);
  std::uint64_t head = free_head_.load(std::memory_order_relaxed);
  for (;;) {
    e.next_free.store(std::uint32_t(head), std::memory_order_relaxed);
    std::uint64_t tag = (head >> 32) + 1;
    if (free_head_.compare_exchange_weak(head, (tag << 32) | (slot + 1), std::memory_order_release,
                                         std::memory_order_relaxed))
      return;
  }
}

Key* Registry::insert(ArrayImpl* impl) {
  Key* key = new_key();
  std::uint32_t slot;
  try {
    slot = acquire_slot();
  } catch (...) {
    release_weak(key);
    release_weak(key);
    throw;
  }
  Entry& e = entry(slot);
  std::uint64_t state = e.state.load(std::memory_order_relaxed);
  key->slot = slot;
  key->generation = generation_of(state);
  key->uuid = Uuid::random();
  impl->slot = slot;
  impl->generation = key->generation;
  impl->uuid = key->uuid;
  key->dtype = impl->dtype;
  key->device = impl->device;
  key->shape = impl->shape;
  e.impl.store(impl, std::memory_order_relaxed);
  e.key.store(hide(key), std::memory_order_relaxed);
  e.state.store(state | kOccupied, std::memory_order_release);
  open_.fetch_add(1, std::memory_order_relaxed);
  return key;
}

namespace {

// Where a close with no site of its own happened: the reclaim paths, which
// no line of the user's code asked for. See Note [Close sites] in key.hpp.
std::string default_where(CloseReason reason) {
  switch (reason) {
    case CloseReason::autoclose:
    case CloseReason::leaked_handle: return "in a drain of the reclaim queue";
    case CloseReason::sweep: return "during the sweep";
    default: return "";
  }
}

Epitaph* make_epitaph(const ArrayImpl& a, CloseReason reason, const CloseSite* site) {
  auto* ep = new Epitaph();
  ep->name = a.get_name();
  ManagerHold owner(a.acquire_owner());
  ep->manager = owner.get() ? owner->path() : std::string();
  ep->reason = reason;
  if (track_close()) {
    ep->tracked = true;
    ep->where = site ? site->text() : default_where(reason);
  }
  if (reason == CloseReason::workspace) ep->detail = workspace_close_detail();
  return ep;
}

}  // namespace

std::string CloseSite::text() const {
  if (site) return fmt::format("at {}:{}", site->file_name(), site->line());
  if (describe) return describe(context);
  return "";
}

namespace {

}  // namespace

CloseResult Registry::request_close(std::uint32_t slot, std::uint32_t generation, CloseReason reason,
                                    const CloseSite* site, ManagerImpl* locked) noexcept {
  CloseResult result;
  if (!try_pin(slot, generation)) return result;
  Entry& e = entry(slot);
  Key* key = reveal<Key>(e.key.load(std::memory_order_acquire));
  // Handles that outlive the array get to say what it was. The message is a
  // courtesy: failing to allocate it must not stop the close.
  if (key->strong.load(std::memory_order_relaxed) != 0 && !key->epitaph.load(std::memory_order_relaxed)) {
    try {
      Epitaph* ep = make_epitaph(*e.impl.load(std::memory_order_relaxed), reason, site);
      Epitaph* expected = nullptr;
      if (!key->epitaph.compare_exchange_strong(expected, ep, std::memory_order_acq_rel)) delete ep;
    } catch (...) {
    }
  }
  std::uint64_t prev = e.state.fetch_or(kClosing, std::memory_order_acq_rel);
  result.initiated = !(prev & kClosing);
  // Our own pin is still held: drop it; if it was the last, finalize here.
  prev = e.state.fetch_sub(1, std::memory_order_acq_rel);
  if ((prev & kPinMask) == 1) result.bytes_freed = finalize(slot, locked);
  return result;
}

CloseResult Registry::close_orphan(std::uint32_t slot, std::uint32_t generation) noexcept {
  Entry& e = entry(slot);
  std::uint64_t s = e.state.load(std::memory_order_acquire);
  if (generation_of(s) != generation || (s & kClosing) || !(s & kOccupied)) return {};
  // No epitaph: no handle is left to read one (Note [Handle counts]).
  if ((s & kPinMask) == 0 && e.state.compare_exchange_strong(s, s | kClosing, std::memory_order_acq_rel))
    return {true, finalize(slot, nullptr)};
  return request_close(slot, generation, CloseReason::autoclose, nullptr, nullptr);
}

std::uint64_t Registry::finalize(std::uint32_t slot, ManagerImpl* locked) noexcept {
  // Exclusive: `closing` is set and no pins remain, so no other thread reads
  // the entry's array or changes the state word until the store below.
  Entry& e = entry(slot);
  ArrayImpl* impl = e.impl.load(std::memory_order_acquire);
  Key* key = reveal<Key>(e.key.load(std::memory_order_relaxed));
  if (ManagerImpl* owner = impl->owner) owner->unlink(impl, owner == locked);
  e.impl.store(nullptr, std::memory_order_relaxed);
  e.key.store(0, std::memory_order_relaxed);
  std::uint64_t s = e.state.load(std::memory_order_relaxed);
  e.state.store(std::uint64_t(generation_of(s) + 1) << 32, std::memory_order_release);
  release_slot(slot);
  open_.fetch_sub(1, std::memory_order_relaxed);
  std::uint64_t freed = impl->storage.reset();
  delete impl;
  release_weak(key);  // the registry's unit
  return freed;
}

// ---- Pinned ------------------------------------------------------------------

void throw_empty(const char* op) {
  throw InvalidArgument(fmt::format(
      "{}: the NDArray handle is empty (default-constructed or moved-from); assign an array to it first", op));
}

namespace {

const char* reason_text(CloseReason r) {
  switch (r) {
    case CloseReason::explicit_close: return "by close()";
    case CloseReason::manager: return "because its manager closed";
    case CloseReason::scope: return "at the end of the NDScope";
    case CloseReason::autoclose: return "by auto-close (no handle reached it)";
    case CloseReason::sweep: return "by gc::sweep() (no handle reached it)";
    case CloseReason::workspace: return "because its workspace recycled its memory";
    case CloseReason::leaked_handle:
      return "by the trace detector, which found no reachable handle to it (a handle kept in malloc "
             "memory, a thread_local or a thread that never called ndgc looks unreachable)";
  }
  return "";
}

}  // namespace

void throw_closed(const Key* key, const char* op) {
  const Epitaph* ep = key->epitaph.load(std::memory_order_acquire);
  if (!ep) {
    throw ArrayClosed(fmt::format("{}: array {} ({}, {}) is closed", op, key->uuid.to_string(),
                                  key->shape.to_string(), to_string(key->dtype)));
  }
  std::string who = fmt::format("{}{} ({}, {}, {})", ep->name.empty() ? "" : "'" + ep->name + "' ",
                                key->uuid.to_string(), key->shape.to_string(), to_string(key->dtype),
                                ep->manager.empty() ? "no manager" : "manager " + ep->manager);
  if (ep->reason == CloseReason::workspace) {
    throw ArrayClosed(fmt::format(
        "{}: array {} was closed {}. Its memory belonged to a workspace cycle that has ended and may hold "
        "other arrays now. To keep an array beyond its cycle, copy it out before the cycle ends: "
        "workspace::detach(array) (ordinary memory) or workspace::leverage_to(array, \"OUTER\") (an "
        "enclosing open workspace)",
        op, who, ep->detail.empty() ? reason_text(ep->reason) : ep->detail));
  }
  // Suggest the switch only when it would have told more (Note [Close sites]).
  std::string where = !ep->where.empty() ? " " + ep->where
                      : ep->tracked      ? std::string()
                      : track_close()    ? std::string(" (close tracking was off when it closed)")
                                         : std::string(" (set NDGC_TRACK_CLOSE=1 to learn where)");
  throw ArrayClosed(fmt::format(
      "{}: array {} was closed {}{}. To use an array after its manager closes, ret() it to the parent "
      "manager or attach() it to a longer-lived one before the close",
      op, who, reason_text(ep->reason), where));
}

}  // namespace ndgc::detail
