// Storage: buffers from the device allocator, freed with the last view.
#include "core/storage.hpp"

#include "core/host_mirror.hpp"

#include <sanitizer/asan_interface.h>  // ASAN_(UN)POISON_MEMORY_REGION: no-ops without ASan

#include <memory>

#include "memory/allocator.hpp"
#include "memory/workspace.hpp"
#include "support/free_list.hpp"

namespace ndgc::detail {

// Note [Storage in its lease]
// A workspace array's Storage object is built in its lease record's payload
// (memory::Lease::payload), not taken from the Storage free list: one record
// per storage instead of two, and no free-list push and pop. The record
// outlives the object: the Storage holds the lease's storage unit until its
// release(), which destroys the object and only then drops the unit (after
// which the workspace may pool the record and build the next Storage there).
// Under ASan the payload is poisoned from the object's end to the next
// construction, so a use of a released Storage is still reported, as for
// one from the free list (which sanitizer builds bypass).
inline Storage* Storage::allocate_in(memory::Workspace& ws, std::size_t bytes) {
  static_assert(sizeof(Storage) <= memory::Lease::kPayloadBytes && alignof(Storage) <= 16);
  memory::Lease* lease = ws.allocate(bytes);
  ASAN_UNPOISON_MEMORY_REGION(lease->payload, sizeof lease->payload);
  Storage* s = ::new (static_cast<void*>(lease->payload)) Storage(ws.device(), bytes, lease->data);  // noexcept
  s->lease_ = lease;
  return s;
}

Storage* Storage::allocate(Device device, std::size_t bytes) {
  // See Note [Workspace storage] in workspace_arrays.cpp. The check comes
  // first and the ordinary path is a call, so a lease pays for no register
  // the ordinary path needs.
  if (memory::Workspace* ws = memory::current_workspace()) [[unlikely]]
    if (bytes != 0 && ws->device() == device) return allocate_in(*ws, bytes);
  return allocate_ordinary(device, bytes);
}

Storage* Storage::allocate_ordinary(Device device, std::size_t bytes) {
  memory::DeviceAllocator& alloc = memory::allocator(device);
  void* data = alloc.allocate(bytes);
  try {
    return new Storage(device, bytes, data);
  } catch (...) {
    alloc.deallocate(data, bytes);
    throw;
  }
}

// A workspace Storage's end: it lives in its lease (Note [Storage in its
// lease]), so the object goes first and the lease's storage unit after.
inline std::uint64_t Storage::release_to(memory::Lease* lease) noexcept {
  const std::uint64_t freed = bytes_;
  this->~Storage();
  ASAN_POISON_MEMORY_REGION(lease->payload, sizeof lease->payload);
  memory::Workspace::release(lease);
  return freed;
}

std::uint64_t Storage::release() noexcept {
  // The last reference needs no locked instruction: with refs == 1 no other
  // thread holds one, so none can take another (a new reference is always
  // copied from a held one).
  if (refs_.load(std::memory_order_acquire) != 1 && refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return 0;
  memory::Lease* lease = lease_;
  if (!lease || mirror_.load(std::memory_order_relaxed)) [[unlikely]]
    return release_last();
  return release_to(lease);
}

// The last reference's general case, out of line so that the common one
// saves no registers: a host mirror to free, or ordinary memory.
std::uint64_t Storage::release_last() noexcept {
  if (HostMirror* m = mirror_.load(std::memory_order_relaxed)) delete m;
  if (memory::Lease* lease = lease_) return release_to(lease);
  const std::uint64_t freed = bytes_;
  memory::allocator(device_).deallocate(data_, bytes_);
  delete this;
  return freed;
}

HostMirror& Storage::host_mirror() {
  HostMirror* m = mirror_.load(std::memory_order_acquire);
  if (m) return *m;
  auto made = std::make_unique<HostMirror>(device_, bytes_);
  if (mirror_.compare_exchange_strong(m, made.get(), std::memory_order_acq_rel, std::memory_order_acquire))
    return *made.release();
  return *m;  // another thread's
}

using StorageFreeList = support::FreeList<sizeof(Storage), Storage>;

void* Storage::operator new(std::size_t) { return StorageFreeList::allocate(); }
void Storage::operator delete(void* p) noexcept { StorageFreeList::free(p); }

}  // namespace ndgc::detail
