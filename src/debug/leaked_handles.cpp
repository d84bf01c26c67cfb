// debug::leaked_handles(): arrays the trace detector closed, by creation site.
//
// The drain records each one as it takes it from the collector (the array is
// still open and pinned then), so the report has the site, the size and the
// manager that held it; after the close none of that could be read.
// Thread-safety: one mutex around a small map, taken by the drain (one at a
// time) and by readers; the manager path is built under the array's `meta`
// lock, which ManagerImpl::path() allows (its own spin locks only).
#include "debug/leaked_handles.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "core/manager_impl.hpp"
#include "ndgc/debug.hpp"
#include "debug/site_groups.hpp"

namespace ndgc::debug {
namespace {

struct Group {
  OrphanGroup out;
  std::set<std::string> managers;
};

struct Report {
  std::mutex mu;
  std::map<std::tuple<std::string, std::uint32_t, std::string>, Group> sites;  // (file, line, function)
  std::uint64_t arrays = 0, bytes = 0;
};

Report& report() {
  static Report* r = new Report();  // never destroyed: drains may run during static destruction
  return *r;
}

}  // namespace

void detail::record_leaked_handle(const ndgc::detail::ArrayImpl& array) noexcept {
  try {
    std::string manager;
    {
      std::lock_guard meta(array.meta);
      if (array.owner) manager = array.owner->path();
    }
    const std::uint64_t bytes = array.nbytes();
    Report& r = report();
    std::lock_guard lock(r.mu);
    Group& g = r.sites[{array.site.file_name(), array.site.line(), array.site.function_name()}];
    if (g.out.arrays == 0) g.out.site = SiteInfo::from(array.site);
    ++g.out.arrays;
    g.out.bytes += bytes;
    if (g.out.uuids.size() < kLeakedUuidsPerSite) g.out.uuids.push_back(array.uuid);
    if (!manager.empty()) g.managers.insert(std::move(manager));
    ++r.arrays;
    r.bytes += bytes;
  } catch (...) {
  }
}

LeakedHandles leaked_handles() {
  LeakedHandles out;
  {
    Report& r = report();
    std::lock_guard lock(r.mu);
    out.arrays = r.arrays;
    out.bytes = r.bytes;
    for (const auto& [key, g] : r.sites) {
      OrphanGroup group = g.out;
      group.managers.assign(g.managers.begin(), g.managers.end());
      std::sort(group.uuids.begin(), group.uuids.end());
      out.groups.push_back(std::move(group));
    }
  }
  detail::sort_largest_first(out.groups);
  return out;
}

void reset_leaked_handles() {
  Report& r = report();
  std::lock_guard lock(r.mu);
  r.sites.clear();
  r.arrays = r.bytes = 0;
}

}  // namespace ndgc::debug
