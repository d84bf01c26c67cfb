// diff(): growth between two snapshots, by (manager path, creation site,
// workspace, device), with the totals per device.
//
// Each snapshot is first folded by its own interned indices (integers, so
// 100k records cost a hash of two numbers each); only the few resulting
// groups are then matched across snapshots by their strings. Managers match
// by path and sites by (file, line): the per-step "system/model/batch" of
// epoch 1 and epoch 10 are the same group, which is what a leak report needs.
//
// Thread-safety: pure function of its arguments.
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "debug/device_bytes.hpp"
#include "ndgc/debug.hpp"

namespace ndgc::debug {

namespace {

struct Count {
  std::uint64_t arrays = 0, bytes = 0;
};

struct FoldKey {
  std::uint32_t manager, site, workspace;
  Device device;
  friend bool operator==(const FoldKey&, const FoldKey&) = default;
};
struct FoldKeyHash {
  std::size_t operator()(const FoldKey& k) const noexcept {
    return std::hash<std::uint64_t>()((std::uint64_t(k.manager) << 32) | k.site) ^ (std::size_t(k.workspace) * 31) ^
           (std::size_t(k.device.type) << 7) ^ (std::size_t(k.device.index) << 9);
  }
};

// (manager index, site index, workspace index) → count.
std::unordered_map<FoldKey, Count, FoldKeyHash> fold(const Snapshot& s) {
  std::unordered_map<FoldKey, Count, FoldKeyHash> groups;
  for (const ArrayRecord& a : s.arrays) {
    Count& c = groups[FoldKey{a.manager, a.site, a.workspace, a.device}];
    ++c.arrays;
    c.bytes += a.bytes;
  }
  return groups;
}

// manager path, file, line, workspace name, device type and index
using GroupKey = std::tuple<std::string, std::string, std::uint32_t, std::string, int, int>;

void merge(const Snapshot& s, bool after, std::map<GroupKey, DiffGroup>& out) {
  for (const auto& [key, count] : fold(s)) {
    const std::string& manager = s.managers.at(key.manager);
    const SiteInfo& site = s.sites.at(key.site);
    const std::string workspace = key.workspace == kNoWorkspace ? std::string() : s.workspaces.at(key.workspace).name;
    DiffGroup& g = out[GroupKey(manager, site.file, site.line, workspace, int(key.device.type), key.device.index)];
    if (g.manager.empty()) {
      g.manager = manager;
      g.site = site;
      g.workspace = workspace;
      g.device = key.device;
    }
    (after ? g.arrays_after : g.arrays_before) += count.arrays;
    (after ? g.bytes_after : g.bytes_before) += count.bytes;
  }
}

}  // namespace

Diff diff(const Snapshot& before, const Snapshot& after) {
  std::map<GroupKey, DiffGroup> groups;
  merge(before, false, groups);
  merge(after, true, groups);
  Diff d;
  d.before = {before.time_ms, before.arrays.size(), before.bytes(), before.devices()};
  d.after = {after.time_ms, after.arrays.size(), after.bytes(), after.devices()};
  for (auto& [key, g] : groups)
    if (g.arrays_before != g.arrays_after || g.bytes_before != g.bytes_after) d.groups.push_back(std::move(g));
  // Largest growth first; ties in a fixed order so the report is stable.
  std::sort(d.groups.begin(), d.groups.end(), [](const DiffGroup& a, const DiffGroup& b) {
    if (a.byte_growth() != b.byte_growth()) return a.byte_growth() > b.byte_growth();
    if (a.array_growth() != b.array_growth()) return a.array_growth() > b.array_growth();
    if (std::tie(a.manager, a.site.file, a.site.line, a.workspace) !=
        std::tie(b.manager, b.site.file, b.site.line, b.workspace))
      return std::tie(a.manager, a.site.file, a.site.line, a.workspace) <
             std::tie(b.manager, b.site.file, b.site.line, b.workspace);
    return by_device::device_before(a.device, b.device);
  });
  return d;
}

namespace {

template <class Keep>
Diff filtered(const Diff& from, Keep keep) {
  Diff d{from.before, from.after, {}};
  for (const DiffGroup& g : from.groups)
    if (keep(g)) d.groups.push_back(g);
  return d;
}

}  // namespace

Diff Diff::growing() const {
  return filtered(*this, [](const DiffGroup& g) { return g.array_growth() > 0 || g.byte_growth() > 0; });
}

Diff Diff::outside_workspaces() const {
  return filtered(*this, [](const DiffGroup& g) { return g.workspace.empty(); });
}

Diff Diff::in_workspaces() const {
  return filtered(*this, [](const DiffGroup& g) { return !g.workspace.empty(); });
}

}  // namespace ndgc::debug
