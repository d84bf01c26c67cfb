// diff(): growth between two snapshots, by (manager path, creation site).
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

#include "ndgc/debug.hpp"

namespace ndgc::debug {

namespace {

struct Count {
  std::uint64_t arrays = 0, bytes = 0;
};

// (manager index, site index) → count.
std::unordered_map<std::uint64_t, Count> fold(const Snapshot& s) {
  std::unordered_map<std::uint64_t, Count> groups;
  for (const ArrayRecord& a : s.arrays) {
    Count& c = groups[(std::uint64_t(a.manager) << 32) | a.site];
    ++c.arrays;
    c.bytes += a.bytes;
  }
  return groups;
}

using GroupKey = std::tuple<std::string, std::string, std::uint32_t>;  // manager path, file, line

void merge(const Snapshot& s, bool after, std::map<GroupKey, DiffGroup>& out) {
  for (const auto& [key, count] : fold(s)) {
    const std::string& manager = s.managers.at(std::size_t(key >> 32));
    const SiteInfo& site = s.sites.at(std::size_t(key & 0xffffffffu));
    DiffGroup& g = out[GroupKey(manager, site.file, site.line)];
    if (g.manager.empty()) {
      g.manager = manager;
      g.site = site;
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
  d.before = {before.time_ms, before.arrays.size(), before.bytes()};
  d.after = {after.time_ms, after.arrays.size(), after.bytes()};
  for (auto& [key, g] : groups)
    if (g.arrays_before != g.arrays_after || g.bytes_before != g.bytes_after) d.groups.push_back(std::move(g));
  // Largest growth first; ties in a fixed order so the report is stable.
  std::sort(d.groups.begin(), d.groups.end(), [](const DiffGroup& a, const DiffGroup& b) {
    if (a.byte_growth() != b.byte_growth()) return a.byte_growth() > b.byte_growth();
    if (a.array_growth() != b.array_growth()) return a.array_growth() > b.array_growth();
    return std::tie(a.manager, a.site.file, a.site.line) < std::tie(b.manager, b.site.file, b.site.line);
  });
  return d;
}

Diff Diff::growing() const {
  Diff d{before, after, {}};
  for (const DiffGroup& g : groups)
    if (g.array_growth() > 0 || g.byte_growth() > 0) d.groups.push_back(g);
  return d;
}

}  // namespace ndgc::debug
