// orphans(): the open arrays no handle reaches, by creation site.
//
// An orphan is an array whose handle count is 0 (Note [Handle counts] in
// src/core/key.hpp): with auto-close on it would have been queued and
// closed; with it off it lives until its manager closes. gc::sweep() closes
// exactly the open arrays with count 0, walking the registry; so does this
// report, through snapshot(), which walks the registry the same way. A count
// never rises from 0, so an orphan found here stays one until it is closed.
//
// Thread-safety: pure function of a snapshot; orphans() takes one.
#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>

#include "ndgc/debug.hpp"
#include "debug/site_groups.hpp"

namespace ndgc::debug {

OrphanReport orphans() { return orphans(snapshot()); }

OrphanReport orphans(const Snapshot& snap) {
  struct Group {
    OrphanGroup out;
    std::set<std::uint32_t> managers;
  };
  std::unordered_map<std::uint32_t, Group> by_site;  // snapshot sites are distinct (file, line) pairs
  OrphanReport report;
  for (const ArrayRecord& a : snap.arrays) {
    if (a.handles != 0) continue;
    Group& g = by_site[a.site];
    ++g.out.arrays;
    g.out.bytes += a.bytes;
    g.out.uuids.push_back(a.uuid);
    g.managers.insert(a.manager);
    ++report.arrays;
    report.bytes += a.bytes;
  }
  for (auto& [site, g] : by_site) {
    g.out.site = snap.sites.at(site);
    for (std::uint32_t m : g.managers) g.out.managers.push_back(snap.managers.at(m));
    std::sort(g.out.managers.begin(), g.out.managers.end());
    std::sort(g.out.uuids.begin(), g.out.uuids.end());
    report.groups.push_back(std::move(g.out));
  }
  detail::sort_largest_first(report.groups);
  return report;
}

}  // namespace ndgc::debug
