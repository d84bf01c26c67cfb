// debug::reclaimed(): the arrays auto-close (the drain) and gc::sweep() closed
// as orphans, by creation site, counted while set_count_reclaimed(true).
//
// The core hands each reclaim to record() (Note [Reclaims by site] in
// core/autoclose.hpp). The hot map is keyed by the site's file pointer and
// line, not by strings, so a count is a lookup and two adds under an
// uncontended mutex (the drain runs on one thread at a time; sweep() may run
// beside it); reclaimed() merges entries whose files are equal as text.
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "core/autoclose.hpp"
#include "ndgc/debug.hpp"
#include "debug/site_groups.hpp"

namespace ndgc::debug {
namespace {

struct Counts {
  Site site;
  std::uint64_t arrays = 0, bytes = 0;
};

struct Tally {
  std::mutex mu;
  std::map<std::pair<const char*, std::uint32_t>, Counts> sites;
};

Tally& tally() {
  static Tally* t = new Tally();  // never destroyed: drains may run during static destruction
  return *t;
}

void record(const ndgc::detail::ReclaimedArray& array) noexcept {
  try {
    Tally& t = tally();
    std::lock_guard lock(t.mu);
    Counts& c = t.sites[{array.site.file_name(), array.site.line()}];
    c.site = array.site;
    ++c.arrays;
    c.bytes += array.bytes;
  } catch (...) {  // no memory for a map node: the count misses one array, the close goes on
  }
}

}  // namespace

void set_count_reclaimed(bool on) noexcept {
  ndgc::detail::g_reclaim_observer.store(on ? &record : nullptr, std::memory_order_relaxed);
}

bool count_reclaimed() noexcept { return ndgc::detail::reclaim_observer() != nullptr; }

OrphanReport reclaimed() {
  std::map<std::tuple<std::string, std::uint32_t>, OrphanGroup> merged;
  {
    Tally& t = tally();
    std::lock_guard lock(t.mu);
    for (const auto& [key, c] : t.sites) {
      OrphanGroup& g = merged[{c.site.file_name(), c.site.line()}];
      if (g.arrays == 0) g.site = SiteInfo::from(c.site);
      g.arrays += c.arrays;
      g.bytes += c.bytes;
    }
  }
  OrphanReport out;
  for (auto& [key, g] : merged) {
    out.arrays += g.arrays;
    out.bytes += g.bytes;
    out.groups.push_back(std::move(g));
  }
  detail::sort_largest_first(out.groups);
  return out;
}

void reset_reclaimed() {
  Tally& t = tally();
  std::lock_guard lock(t.mu);
  t.sites.clear();
}

}  // namespace ndgc::debug
