// debug::workspaces_text(): every thread's workspaces, one line each, and the
// section that the dump of the whole tree and snapshots end with. Reads
// workspace::list() (relaxed statistics, one lock): any thread.
#include <fmt/format.h>

#include "ndgc/debug.hpp"
#include "ndgc/memory.hpp"
#include "ndgc/workspace.hpp"

namespace ndgc::debug {

std::string workspaces_text() { return workspaces_text(workspace::list()); }

std::string workspaces_text(const std::vector<workspace::Info>& all) {
  std::string out = fmt::format("workspaces: {}\n", all.size());
  for (const workspace::Info& w : all) {
    const workspace::Stats& s = w.stats;
    out += fmt::format(
        "  '{}' thread {} {} {} cycle {}: capacity {}, used {} (peak {}), spilled {}, learned {}, {} storages, "
        "{} reallocations\n",
        w.name, w.thread, w.device.to_string(), w.open ? "open" : "closed", w.cycle,
        memory::format_bytes(s.capacity), memory::format_bytes(s.used), memory::format_bytes(s.peak_used),
        memory::format_bytes(s.spilled_bytes), memory::format_bytes(w.learned_size), s.allocations,
        s.reallocations);
  }
  return out;
}

}  // namespace ndgc::debug
