// The leak report: leaked handles grouped by creation site. The report itself
// lives in the debug layer (debug::leaked_handles(), src/debug/leaked_handles.cpp);
// this is the detector's side: recording from the drain, and the short
// trace::leak_report() view of it.
#include "trace/leak_report.hpp"

#include <fmt/format.h>

#include "core/registry.hpp"
#include "debug/leaked_handles.hpp"
#include "ndgc/debug.hpp"
#include "ndgc/memory.hpp"
#include "ndgc/trace.hpp"

namespace ndgc::trace {

// From the drain as it takes leaked keys (leak_list.cpp): it pins each array
// to read it, so an array closed meanwhile by other means (its manager) is
// not reported.
void detail::record_leak(const ndgc::detail::Key& key) noexcept {
  ndgc::detail::Registry& reg = ndgc::detail::Registry::instance();
  if (!reg.try_pin(key.slot, key.generation)) return;
  debug::detail::record_leaked_handle(*reg.entry(key.slot).impl.load(std::memory_order_acquire));
  reg.unpin(key.slot);
}

std::vector<LeakSite> leak_report() {
  std::vector<LeakSite> out;
  for (const debug::OrphanGroup& g : debug::leaked_handles().groups)
    out.push_back(LeakSite{g.site.file, g.site.line, g.site.function, g.arrays, g.bytes});
  return out;
}

void reset_leak_report() { debug::reset_leaked_handles(); }

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
