// to_text(): the stable, human-readable form of every debug report.
//
// One header line, then one line per group (or manager and array), columns in
// the order debug.hpp documents at each to_text(). Sizes are human-readable
// (memory::format_bytes) with the exact byte count in the header; growth is
// signed. Tools should read to_json() instead; this format may gain columns
// at the end of a line, never lose or reorder them.
//
// Thread-safety: pure functions of their values.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <tuple>
#include <map>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "debug/device_bytes.hpp"
#include "ndgc/debug.hpp"
#include "ndgc/memory.hpp"

namespace ndgc::debug {

namespace {

std::string human(std::uint64_t bytes) { return memory::format_bytes(bytes); }

std::string signed_human(std::int64_t bytes) {
  if (bytes == 0) return "0 B";
  // Appended, not `"+" + string`: GCC 12 at -O3 warns (-Wrestrict) about that
  // operator+'s inlined memcpy.
  std::string out(bytes > 0 ? "+" : "-");
  out += memory::format_bytes(std::uint64_t(std::llabs(bytes)));
  return out;
}

std::string signed_count(std::int64_t n) { return n > 0 ? fmt::format("+{}", n) : fmt::format("{}", n); }

// The column a group in a workspace ends with.
std::string in_workspace(std::string_view name) {
  return name.empty() ? std::string() : fmt::format("  in workspace '{}'", name);
}

// The column a group on a GPU ends with (none on the CPU: CPU-only reports read as before).
std::string on_device(Device d) { return d.is_cpu() ? std::string() : "  on " + d.to_string(); }

void more_line(std::string& out, std::size_t shown, std::size_t total) {
  if (shown < total) out += fmt::format("  ... {} more groups\n", total - shown);
}

void manager_text(const ManagerInfo& m, bool detailed, int depth, std::string& out) {
  std::string indent(std::size_t(depth) * 2, ' ');
  std::string label = depth == 0 ? m.path : (m.name.empty() ? "(unnamed)" : m.name);
  out += fmt::format("{}{} [{}] {}{}{}: {} arrays, {}, {} sub-managers{}\n", indent, label, m.uuid.to_string(),
                     m.device.to_string(), m.open ? "" : " closed", m.capped ? " capped" : "", m.array_count,
                     human(m.bytes), m.children.size(),
                     by_device::any_gpu(m.devices) ? "; by device: " + to_string(m.devices) : std::string());
  if (detailed)
    for (const ArrayInfo& a : m.arrays)
      out += fmt::format("{}  - {}{} {} {} {}{}{} at {} handles={}{}{}\n", indent, a.uuid.to_string(),
                         a.name.empty() ? "" : " '" + a.name + "'", a.shape.to_string(), to_string(a.dtype),
                         human(a.nbytes), a.view ? " (view)" : "", a.borrowed ? " (borrowed)" : "",
                         a.site.to_string(), a.handles, a.handles == 0 ? " (orphan)" : "",
                         a.device.is_cpu() ? std::string() : " on " + a.device.to_string());
  for (const ManagerInfo& c : m.children) manager_text(c, detailed, depth + 1, out);
}

}  // namespace

std::string Dump::to_text() const {
  std::string out;
  manager_text(root, detailed, 0, out);
  if (const std::vector<DeviceBytes> all = root.devices_below(); by_device::any_gpu(all))
    out += "by device: " + to_string(all) + "\n";
  if (!workspaces.empty()) out += workspaces_text(workspaces);
  return out;
}

std::string Snapshot::to_text(std::size_t max_groups) const {
  struct Group {
    std::uint32_t manager, site, workspace;
    Device device;
    std::uint64_t arrays = 0, bytes = 0;
  };
  // (manager, site, workspace, device type, device index)
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, int, int>, Group> by_key;
  for (const ArrayRecord& a : arrays) {
    Group& g = by_key
                   .try_emplace({a.manager, a.site, a.workspace, int(a.device.type), a.device.index},
                                Group{a.manager, a.site, a.workspace, a.device})
                   .first->second;
    ++g.arrays;
    g.bytes += a.bytes;
  }
  std::vector<Group> groups;
  groups.reserve(by_key.size());
  for (const auto& [key, g] : by_key) groups.push_back(g);
  std::sort(groups.begin(), groups.end(), [this](const Group& a, const Group& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.arrays != b.arrays) return a.arrays > b.arrays;
    if (std::tie(managers[a.manager], sites[a.site].file, sites[a.site].line, a.workspace) !=
        std::tie(managers[b.manager], sites[b.site].file, sites[b.site].line, b.workspace))
      return std::tie(managers[a.manager], sites[a.site].file, sites[a.site].line, a.workspace) <
             std::tie(managers[b.manager], sites[b.site].file, sites[b.site].line, b.workspace);
    return by_device::device_before(a.device, b.device);
  });
  std::uint64_t total = this->bytes();
  std::string out = fmt::format("snapshot: {} arrays, {} ({} B), {} orphans", arrays.size(), human(total), total,
                                orphan_count());
  if (!workspaces.empty()) out += fmt::format(", {} arrays in workspaces", workspace_array_count());
  if (const std::vector<DeviceBytes> d = devices(); by_device::any_gpu(d)) out += "; by device: " + to_string(d);
  out += "\n";
  if (groups.empty()) out += "  (no arrays)\n";
  std::size_t shown = std::min(max_groups, groups.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const Group& g = groups[i];
    out += fmt::format("  {:>8}  {:>10}  {}  {}{}{}\n", g.arrays, human(g.bytes), managers.at(g.manager),
                       sites.at(g.site).to_string(),
                       in_workspace(g.workspace == kNoWorkspace ? std::string_view() : workspaces.at(g.workspace).name),
                       on_device(g.device));
  }
  more_line(out, shown, groups.size());
  if (!workspaces.empty()) out += workspaces_text(workspaces);
  return out;
}

std::string Diff::to_text(std::size_t max_groups) const {
  std::string out = fmt::format("diff: {} arrays, {} ({} B); before {} arrays, {}; after {} arrays, {}",
                                signed_count(array_growth()), signed_human(byte_growth()),
                                signed_count(byte_growth()), before.arrays, human(before.bytes), after.arrays,
                                human(after.bytes));
  if (by_device::any_gpu(before.devices) || by_device::any_gpu(after.devices)) {
    std::vector<DeviceBytes> all = before.devices;  // every device either side has
    for (const DeviceBytes& d : after.devices) by_device::add(all, d.device, 0, 0);
    for (const DeviceBytes& d : all)
      out += fmt::format("; {} {} (before {}, after {})", d.device.to_string(), signed_human(byte_growth(d.device)),
                         human(bytes_on(before.devices, d.device)), human(bytes_on(after.devices, d.device)));
  }
  out += "\n";
  if (groups.empty()) out += "  (no change)\n";
  std::size_t shown = std::min(max_groups, groups.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const DiffGroup& g = groups[i];
    out += fmt::format("  {:>8}  {:>11}  {}  {}{}{}\n", signed_count(g.array_growth()),
                       signed_human(g.byte_growth()), g.manager, g.site.to_string(), in_workspace(g.workspace),
                       on_device(g.device));
  }
  more_line(out, shown, groups.size());
  return out;
}

namespace {

// Orphans and leaked handles: the same groups under different headers.
std::string site_groups_text(std::string_view title, std::string_view meaning, std::uint64_t arrays,
                             std::uint64_t bytes, const std::vector<OrphanGroup>& groups, std::size_t max_groups) {
  std::string out = fmt::format("{}: {} arrays, {} ({} B) {}\n", title, arrays, human(bytes), bytes, meaning);
  if (groups.empty()) out += "  (none)\n";
  std::size_t shown = std::min(max_groups, groups.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const OrphanGroup& g = groups[i];
    out += fmt::format("  {:>8}  {:>10}  {}  in {}\n", g.arrays, human(g.bytes), g.site.to_string(),
                       fmt::join(g.managers, ", "));
  }
  more_line(out, shown, groups.size());
  return out;
}

}  // namespace

std::string OrphanReport::to_text(std::size_t max_groups) const {
  return site_groups_text("orphans", "that no handle reaches", arrays, bytes, groups, max_groups);
}

std::string LeakedHandles::to_text(std::size_t max_groups) const {
  return site_groups_text("leaked handles", "closed by the trace detector", arrays, bytes, groups, max_groups);
}

}  // namespace ndgc::debug
