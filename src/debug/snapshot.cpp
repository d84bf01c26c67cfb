// snapshot(): every open array, as cheap plain records.
//
// It walks the registry's slots, as gc::sweep() does (src/core/autoclose.cpp),
// rather than the manager tree: each array sits in exactly one slot, so none
// is counted twice even while arrays move between managers, and what
// orphans() derives from a snapshot is exactly the set sweep() would close.
// Per array: pin it (a CAS; a closing array cannot be pinned and is skipped),
// read its owner under its `meta` spin lock, copy the fixed fields, unpin. No
// manager mutex is taken and no handle is made (Note [Handle counts]: a
// snapshot must not resurrect an orphan).
//
// An array whose storage is a workspace lease is tagged with the lease's
// workspace id (a plain field, alive while the array's storage holds the
// lease) and, after the walk, matched against workspace::list(). An array
// whose workspace was destroyed during the walk was closed by it: left out,
// as any array closed during the walk may be.
//
// Manager paths and sites are interned: a record is 40 bytes with two
// indices, and paths (string building under spin locks) are computed once
// per manager, not once per array. Measured: ~10 ms for 100k arrays
// (tests/debug/snapshot_test.cpp prints the figure).
//
// Thread-safety: no shared state; any number of threads may snapshot at once.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "core/array_impl.hpp"
#include "core/key.hpp"
#include "core/manager_impl.hpp"
#include "core/reclaim_queue.hpp"
#include "core/registry.hpp"
#include "debug/device_bytes.hpp"
#include "memory/workspace.hpp"
#include "ndgc/debug.hpp"

namespace ndgc::debug {

using detail::ArrayImpl;
using detail::ManagerHold;
using detail::ManagerImpl;
using detail::Registry;

namespace {

// Managers seen so far. The holds keep each one alive for the whole walk, so
// a pointer in `index` can never name a different, newer manager.
struct ManagerTable {
  std::unordered_map<const ManagerImpl*, std::uint32_t> index;
  std::vector<ManagerHold> holds;
};

struct SiteKey {
  const char* file;
  std::uint32_t line;
  friend bool operator==(const SiteKey&, const SiteKey&) = default;
};
struct SiteKeyHash {
  std::size_t operator()(const SiteKey& k) const noexcept {
    return std::hash<const void*>()(k.file) * 31 + k.line;
  }
};

// Sites by (file pointer, line): the pointer is what the compiler gives each
// call, so this is exact within a translation unit; the same file seen
// through two pointers (a header included twice) is merged afterwards.
struct SiteTable {
  std::unordered_map<SiteKey, std::uint32_t, SiteKeyHash> index;
  std::vector<Site> sites;
  std::uint32_t of(const Site& s) {
    auto [it, fresh] = index.try_emplace(SiteKey{s.file_name(), s.line()}, std::uint32_t(sites.size()));
    if (fresh) sites.push_back(s);
    return it->second;
  }
};

// The walk's pin on one slot. Never hold a lock when it ends: the last unpin
// of an array closed meanwhile finalizes it, which takes its manager's mutex.
struct Unpin {
  Registry& reg;
  std::uint32_t slot;
  ~Unpin() { reg.unpin(slot); }
};

// Merges duplicate paths and (file, line) pairs; returns old index → new index.
template <class T, class Key>
std::vector<std::uint32_t> dedupe(std::vector<T>& items, Key key_of) {
  std::vector<std::uint32_t> remap(items.size());
  std::unordered_map<decltype(key_of(items[0])), std::uint32_t> seen;
  std::vector<T> kept;
  kept.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto [it, fresh] = seen.try_emplace(key_of(items[i]), std::uint32_t(kept.size()));
    if (fresh) kept.push_back(std::move(items[i]));
    remap[i] = it->second;
  }
  items = std::move(kept);
  return remap;
}

// Lists the workspaces and points each record at its own; drops the records
// of workspaces destroyed since (their arrays are closed).
void tag_workspaces(Snapshot& snap, const std::vector<std::uint64_t>& ids) {
  snap.workspaces = workspace::list();
  if (std::all_of(ids.begin(), ids.end(), [](std::uint64_t id) { return id == 0; })) return;
  std::unordered_map<std::uint64_t, std::uint32_t> index;
  for (std::size_t i = 0; i < snap.workspaces.size(); ++i) index.emplace(snap.workspaces[i].id, std::uint32_t(i));
  std::size_t kept = 0;
  for (std::size_t i = 0; i < snap.arrays.size(); ++i) {
    ArrayRecord r = snap.arrays[i];
    if (ids[i] != 0) {
      auto it = index.find(ids[i]);
      if (it == index.end()) continue;
      r.workspace = it->second;
    }
    snap.arrays[kept++] = r;
  }
  snap.arrays.resize(kept);
}

}  // namespace

Snapshot snapshot() {
  detail::enter();
  Snapshot snap;
  snap.time_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  Registry& reg = Registry::instance();
  snap.arrays.reserve(std::size_t(reg.open_arrays()) + 64);
  ManagerTable managers;
  SiteTable sites;
  std::vector<std::uint64_t> workspace_ids;  // per record: its lease's workspace id, 0 for none
  workspace_ids.reserve(snap.arrays.capacity());

  for (std::uint32_t slot = 0, n = reg.slot_count(); slot < n; ++slot) {
    detail::Entry& e = reg.entry(slot);
    std::uint64_t state = e.state.load(std::memory_order_acquire);
    if (!(state & Registry::kOccupied) || (state & Registry::kClosing)) continue;
    if (!reg.try_pin(slot, Registry::generation_of(state))) continue;
    Unpin unpin{reg, slot};
    const ArrayImpl& a = *e.impl.load(std::memory_order_acquire);
    std::uint32_t manager = 0;
    bool owned = false, fresh = false;
    ManagerImpl* owner;
    {
      // The owner can change under us (attach on another thread) and only its
      // reference, held by the array, keeps it alive: look it up and retain a
      // new one while `meta` fixes it.
      std::lock_guard meta(a.meta);
      owner = a.owner;
      if (owner) {
        owned = true;
        auto it = managers.index.find(owner);
        if (it != managers.index.end()) {
          manager = it->second;
        } else {
          owner->retain();
          fresh = true;
        }
      }
    }
    if (fresh) {
      manager = std::uint32_t(managers.holds.size());
      managers.holds.emplace_back(owner);  // adopts the reference taken above
      managers.index.emplace(owner, manager);
    }
    if (owned) {
      // Linked while pinned, so the entry still holds its key (and the key's
      // memory): reading the count is safe. A relaxed read, as sweep() does.
      const detail::Key* key = detail::reveal<detail::Key>(e.key.load(std::memory_order_acquire));
      snap.arrays.push_back(ArrayRecord{a.uuid, manager, sites.of(a.site), a.charged_bytes(),
                                        key ? key->strong.load(std::memory_order_relaxed) : 0, kNoWorkspace,
                                        a.device});
      const memory::Lease* lease = a.storage.get() ? a.storage->lease() : nullptr;
      workspace_ids.push_back(lease ? lease->workspace_id : 0);
    }
    // Not yet owned: link_new publishes before it sets the owner; the array
    // is still being created, as if the walk had passed before it.
  }

  snap.managers.reserve(managers.holds.size());
  for (const ManagerHold& m : managers.holds) snap.managers.push_back(m->path());
  snap.sites.reserve(sites.sites.size());
  for (const Site& s : sites.sites) snap.sites.push_back(SiteInfo::from(s));
  std::vector<std::uint32_t> manager_map = dedupe(snap.managers, [](const std::string& p) { return p; });
  std::vector<std::uint32_t> site_map = dedupe(snap.sites, [](const SiteInfo& s) {
    return s.file + ":" + std::to_string(s.line);
  });
  for (ArrayRecord& r : snap.arrays) {
    r.manager = manager_map[r.manager];
    r.site = site_map[r.site];
  }
  tag_workspaces(snap, workspace_ids);
  return snap;
}

std::uint64_t live_array_count() noexcept { return Registry::instance().open_arrays(); }

std::uint64_t Snapshot::bytes() const noexcept {
  std::uint64_t total = 0;
  for (const ArrayRecord& a : arrays) total += a.bytes;
  return total;
}

std::vector<DeviceBytes> Snapshot::devices() const {
  std::vector<DeviceBytes> out;
  for (const ArrayRecord& a : arrays) by_device::add(out, a.device, a.bytes);
  return out;
}

std::size_t Snapshot::workspace_array_count() const noexcept {
  return std::size_t(
      std::count_if(arrays.begin(), arrays.end(), [](const ArrayRecord& a) { return a.in_workspace(); }));
}

std::size_t Snapshot::orphan_count() const noexcept {
  return std::size_t(std::count_if(arrays.begin(), arrays.end(), [](const ArrayRecord& a) { return a.handles == 0; }));
}

}  // namespace ndgc::debug
