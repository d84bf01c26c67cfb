// Workspace storage: arrays whose buffers are leases of a workspace's arena,
// and how they are closed before their bytes are reused.
//
// Note [Workspace storage]
// The memory layer hands out leases and knows nothing of arrays
// (src/memory/workspace.hpp). Core adds three things:
//  1. Storage::allocate takes a lease when a workspace is the innermost one
//     open on the thread (one TLS load when none is); the Storage keeps the
//     lease and gives it back in release() instead of freeing.
//  2. publish() notes each array (registry slot + generation) whose storage is
//     a lease, in a lock-free list hung on the lease. Views share their
//     base's Storage, so they are noted on the same lease. publish holds a
//     StorageRef across link_new, so the lease outlives the note even if
//     another thread closes the array at once.
//  3. Before the workspace reuses or frees leases' bytes (a new cycle, the
//     ring wrapping, a spill's cycle ending, destroy) it calls recycle_leases,
//     which seals each list and closes every array in it through the registry
//     (CloseReason::workspace; stale generations are skipped). A handle used
//     after that throws ArrayClosed naming the workspace and its cycle. A view
//     published after the seal is closed as soon as it is noted.
// Closing an array another thread has pinned only marks it; the workspace
// sees the lease still held and retires the block rather than reuse it
// (Note [Retired blocks] in src/memory/workspace.cpp). So no handle ever
// reads a reused byte, whatever the threads do.
// Arrays in a workspace still belong to managers: closing a manager closes
// them early, auto-close closes orphans early; their bytes come back at the
// cycle's end, as any bump allocator's do. The Storage object itself lives
// in its lease record: Note [Storage in its lease] in storage.cpp.
#include "core/workspace_arrays.hpp"

#include <atomic>
#include <new>

#include "core/registry.hpp"
#include "core/storage.hpp"
#include "memory/workspace.hpp"

namespace ndgc::detail {
namespace {

struct Tenant {
  std::uint32_t slot, generation;
  Tenant* next;
};
constexpr std::uintptr_t kSealed = 1;

// Recycled list nodes of this thread (the workspace's thread makes and frees
// most of them): steady-state cycles allocate none. The free list is a
// trivial thread_local, usable while the thread's workspaces are destroyed at
// its exit, whatever the order of thread_local destructors; t_closer frees it
// and from then on nodes are deleted at once.
constinit thread_local Tenant* t_free = nullptr;
constinit thread_local bool t_pool_closed = false;
struct PoolCloser {
  ~PoolCloser() {
    t_pool_closed = true;
    while (Tenant* t = t_free) {
      t_free = t->next;
      delete t;
    }
  }
};
thread_local PoolCloser t_closer;

Tenant* take_tenant() {
  (void)&t_closer;  // constructs it on this thread's first use
  if (Tenant* t = t_free) {
    t_free = t->next;
    return t;
  }
  return new (std::nothrow) Tenant;
}

void give_tenant(Tenant* t) noexcept {
  if (t_pool_closed) {
    delete t;
    return;
  }
  t->next = t_free;
  t_free = t;
}

thread_local const memory::Lease* t_recycling = nullptr;

}  // namespace

namespace {

void close_tenants(memory::Lease& lease) noexcept {
  // With the storage's lease unit gone (refs == 1) no StorageRef to this
  // lease exists, so no publish() can note another array: the list is final
  // and needs no seal (Note [Lease units] in src/memory/workspace.cpp).
  std::uintptr_t list = lease.refs.load(std::memory_order_acquire) == 1
                            ? lease.tenants.load(std::memory_order_acquire)
                            : lease.tenants.exchange(kSealed, std::memory_order_acq_rel);
  if (list == kSealed || list == 0) return;
  t_recycling = &lease;
  Registry& reg = Registry::instance();
  for (Tenant* t = reinterpret_cast<Tenant*>(list); t;) {
    Tenant* next = t->next;
    reg.request_close(t->slot, t->generation, CloseReason::workspace, nullptr, nullptr);
    give_tenant(t);
    t = next;
  }
  t_recycling = nullptr;
}

}  // namespace

void recycle_leases(memory::Lease* const* leases, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) close_tenants(*leases[i]);
}

void note_workspace_array(memory::Lease& lease, std::uint32_t slot, std::uint32_t generation) noexcept {
  Tenant* t = take_tenant();
  std::uintptr_t head = lease.tenants.load(std::memory_order_acquire);
  if (t) {
    t->slot = slot;
    t->generation = generation;
    for (;;) {
      if (head == kSealed) break;
      t->next = reinterpret_cast<Tenant*>(head);
      if (lease.tenants.compare_exchange_weak(head, reinterpret_cast<std::uintptr_t>(t), std::memory_order_acq_rel,
                                              std::memory_order_acquire))
        return;
    }
    give_tenant(t);
  }
  // Recycled already (or no memory to note it: then it cannot be found at
  // recycle time, so it must not outlive this moment either).
  Registry::instance().request_close(slot, generation, CloseReason::workspace, nullptr, nullptr);
}

std::string workspace_close_detail() {
  const memory::Lease* l = t_recycling;
  return l && l->workspace ? l->workspace->describe_recycle(*l) : std::string();
}

}  // namespace ndgc::detail
