// The leak report: leaked handles grouped by creation site (DESIGN.md §5's
// grouping, for what the trace detector found).
//
// Filled by the drain as it takes leaked keys (leak_list.cpp): it pins each
// array and reads its site and size, so an array closed meanwhile by other
// means (its manager) is not reported. Thread-safety: one mutex around a
// small map, taken by the drain and by readers.
#include "trace/leak_report.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "core/array_impl.hpp"
#include "core/registry.hpp"
#include "ndgc/memory.hpp"
#include "ndgc/trace.hpp"

namespace ndgc::trace {
namespace {

using SiteKey = std::tuple<std::string, std::uint32_t, std::string>;  // file, line, function

struct Report {
  std::mutex mu;
  std::map<SiteKey, LeakSite> sites;
};

Report& report() {
  static Report* r = new Report();  // never destroyed: drains may run during static destruction
  return *r;
}

}  // namespace

void detail::record_leak(const ndgc::detail::Key& key) noexcept {
  ndgc::detail::Registry& reg = ndgc::detail::Registry::instance();
  if (!reg.try_pin(key.slot, key.generation)) return;
  const ndgc::detail::ArrayImpl* impl = reg.entry(key.slot).impl.load(std::memory_order_acquire);
  Site site = impl->site;
  std::uint64_t bytes = impl->nbytes();
  reg.unpin(key.slot);
  try {
    Report& r = report();
    std::lock_guard lock(r.mu);
    LeakSite& s = r.sites[SiteKey(site.file_name(), site.line(), site.function_name())];
    if (s.arrays == 0) {
      s.file = site.file_name();
      s.line = site.line();
      s.function = site.function_name();
    }
    ++s.arrays;
    s.bytes += bytes;
  } catch (...) {
  }
}

std::vector<LeakSite> leak_report() {
  std::vector<LeakSite> out;
  {
    Report& r = report();
    std::lock_guard lock(r.mu);
    out.reserve(r.sites.size());
    for (const auto& [key, site] : r.sites) out.push_back(site);
  }
  std::stable_sort(out.begin(), out.end(), [](const LeakSite& a, const LeakSite& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.arrays > b.arrays;
  });
  return out;
}

void reset_leak_report() {
  Report& r = report();
  std::lock_guard lock(r.mu);
  r.sites.clear();
}

std::string leak_report_text(std::size_t max_sites) {
  std::vector<LeakSite> sites = leak_report();
  if (sites.empty()) return "no leaked handles found\n";
  std::string text;
  for (std::size_t i = 0; i < sites.size() && i < max_sites; ++i) {
    const LeakSite& s = sites[i];
    text += fmt::format("{:>8} arrays {:>10}  {}:{} ({})\n", s.arrays, memory::format_bytes(s.bytes), s.file,
                        s.line, s.function);
  }
  if (sites.size() > max_sites) text += fmt::format("... and {} more sites\n", sites.size() - max_sites);
  return text;
}

}  // namespace ndgc::trace
