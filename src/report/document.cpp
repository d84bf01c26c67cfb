// The report document's pieces (page/SCHEMA.md) from the debug layer's
// values: a snapshot's groups, a manager tree, and whole documents from saved
// snapshots or a dump. The page computes the leak table and the diffs from
// the groups, so a document stays small however many arrays a snapshot has:
// one entry per (manager, site, workspace, device), and at most
// kTreeItemsPerSite arrays per manager and site in the tree.
#include <chrono>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ndgc/error.hpp"
#include "ndgc/report.hpp"

namespace ndgc::report {

using nlohmann::json;

namespace {

std::string site_text(const debug::SiteInfo& s) { return s.file.empty() ? std::string("(unknown)") : s.to_string(); }

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ---- groups --------------------------------------------------------------------------

struct Group {
  std::string manager, site, function, workspace, device;
  std::uint64_t arrays = 0, bytes = 0, orphans = 0;
};
using GroupKey = std::tuple<std::string, std::string, std::string, std::string>;  // manager, site, workspace, device

json groups_json(const std::map<GroupKey, Group>& groups) {
  json out = json::array();
  for (const auto& [key, g] : groups)
    out.push_back(json{{"manager", g.manager}, {"site", g.site}, {"function", g.function}, {"workspace", g.workspace},
                       {"device", g.device}, {"arrays", g.arrays}, {"bytes", g.bytes}, {"orphans", g.orphans}});
  return out;
}

void count(std::map<GroupKey, Group>& groups, Group g, std::uint64_t bytes, bool orphan) {
  Group& into = groups.try_emplace(GroupKey{g.manager, g.site, g.workspace, g.device}, std::move(g)).first->second;
  ++into.arrays;
  into.bytes += bytes;
  into.orphans += orphan;
}

json snapshot_json(const debug::Snapshot& s, std::string_view label) {
  std::map<GroupKey, Group> groups;
  for (const debug::ArrayRecord& a : s.arrays) {
    const debug::SiteInfo& site = s.site_of(a);
    const workspace::Info* ws = s.workspace_of(a);
    count(groups, Group{s.manager_of(a), site_text(site), site.function, ws ? ws->name : std::string(),
                        device_argument(a.device)},
          a.bytes, a.handles == 0);
  }
  return json{{"label", label}, {"time_ms", s.time_ms}, {"groups", groups_json(groups)}};
}

void dump_groups(const debug::ManagerInfo& m, std::map<GroupKey, Group>& groups) {
  for (const debug::ArrayInfo& a : m.arrays)
    count(groups, Group{m.path, site_text(a.site), a.site.function, {}, device_argument(a.device)}, a.bytes,
          a.handles == 0);
  if (m.arrays.empty() && m.array_count > 0)  // a summary dump: arrays counted, sites not recorded
    groups.try_emplace(GroupKey{m.path, "(sites not in a summary dump)", "", device_argument(m.device)},
                       Group{m.path, "(sites not in a summary dump)", "", "", device_argument(m.device),
                             m.array_count, m.bytes, 0});
  for (const debug::ManagerInfo& c : m.children) dump_groups(c, groups);
}

// ---- trees -----------------------------------------------------------------------------

// What a tree node needs to know about an array, from a dump or a snapshot.
struct Item {
  json value;
  std::string site;
  bool in_workspace = false;
  std::uint64_t bytes = 0;
};

// Keeps kTreeItemsPerSite arrays per site, in the order given (oldest first).
json sample_items(const std::vector<Item>& items, std::uint64_t& left_out) {
  std::unordered_map<std::string, std::size_t> per_site;
  json out = json::array();
  for (const Item& i : items) {
    if (per_site[i.site]++ < kTreeItemsPerSite) out.push_back(i.value);
    else ++left_out;
  }
  return out;
}

// A node's own fields; children, arrays_below and bytes_below are the caller's.
json node_json(const std::string& name, const std::string& path, const std::string& device, bool open,
               const std::vector<Item>& items, std::uint64_t arrays, std::uint64_t bytes) {
  std::uint64_t left_out = 0, workspace_bytes = 0;
  for (const Item& i : items) workspace_bytes += i.in_workspace ? i.bytes : 0;
  json node{{"name", name}, {"path", path}, {"device", device}, {"open", open}, {"arrays", arrays}, {"bytes", bytes},
            {"workspace_bytes", workspace_bytes}};
  node["items"] = sample_items(items, left_out);
  node["items_left_out"] = left_out + (arrays > items.size() ? arrays - items.size() : 0);
  node["children"] = json::array();
  return node;
}

void add_below(json& node) {
  std::uint64_t arrays = node["arrays"].get<std::uint64_t>(), bytes = node["bytes"].get<std::uint64_t>();
  for (const json& c : node["children"]) {
    arrays += c["arrays_below"].get<std::uint64_t>();
    bytes += c["bytes_below"].get<std::uint64_t>();
  }
  node["arrays_below"] = arrays;
  node["bytes_below"] = bytes;
}

json shape_json(const Shape& shape) {
  json dims = json::array();
  const Shape local = shape;
  for (std::int64_t d : local) dims.push_back(d);
  return dims;
}

json dump_node(const debug::ManagerInfo& m, const std::unordered_map<std::string, std::string>& workspace_of) {
  std::vector<Item> items;
  items.reserve(m.arrays.size());
  for (const debug::ArrayInfo& a : m.arrays) {
    const std::string uuid = a.uuid.to_string();
    const auto ws = workspace_of.find(uuid);
    const std::string workspace = ws == workspace_of.end() ? std::string() : ws->second;
    items.push_back(Item{json{{"uuid", uuid}, {"name", a.name}, {"shape", shape_json(a.shape)},
                              {"dtype", std::string(to_string(a.dtype))}, {"bytes", a.bytes}, {"handles", a.handles},
                              {"site", site_text(a.site)}, {"workspace", workspace}, {"view", a.view}},
                         site_text(a.site), !workspace.empty(), a.bytes});
  }
  json node = node_json(m.name, m.path, device_argument(m.device), m.open, items, m.array_count, m.bytes);
  for (const debug::ManagerInfo& c : m.children) node["children"].push_back(dump_node(c, workspace_of));
  add_below(node);
  return node;
}

// The tree a snapshot implies: its manager paths, split at '/'.
struct PathNode {
  std::map<std::string, PathNode> children;
  std::vector<Item> items;
  std::uint64_t arrays = 0, bytes = 0;
  std::string device = "cpu";
};

json path_node_json(const std::string& name, const std::string& path, const PathNode& p) {
  json node = node_json(name, path, p.device, true, p.items, p.arrays, p.bytes);
  for (const auto& [child, c] : p.children) node["children"].push_back(path_node_json(child, path + "/" + child, c));
  add_below(node);
  return node;
}

json snapshot_tree(const debug::Snapshot& s) {
  PathNode root;
  for (const debug::ArrayRecord& a : s.arrays) {
    const std::string& path = s.manager_of(a);
    PathNode* node = &root;
    std::size_t at = path.find('/');  // the first part is the root ("system")
    while (at != std::string::npos) {
      const std::size_t next = path.find('/', at + 1);
      node = &node->children[path.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1)];
      at = next;
    }
    const workspace::Info* ws = s.workspace_of(a);
    node->items.push_back(Item{json{{"uuid", a.uuid.to_string()}, {"name", ""}, {"shape", nullptr}, {"dtype", nullptr},
                                    {"bytes", a.bytes}, {"handles", a.handles}, {"site", site_text(s.site_of(a))},
                                    {"workspace", ws ? ws->name : std::string()}, {"view", a.bytes == 0}},
                               site_text(s.site_of(a)), ws != nullptr, a.bytes});
    ++node->arrays;
    node->bytes += a.bytes;
    node->device = device_argument(a.device);
  }
  const std::string root_name = s.managers.empty() ? "system" : s.managers.front().substr(0, s.managers.front().find('/'));
  return path_node_json(root_name, root_name, root);
}

std::string run_device(const std::vector<debug::DeviceBytes>& devices) {
  for (const debug::DeviceBytes& d : devices)
    if (!d.device.is_cpu()) return device_argument(d.device);
  return "cpu";
}

json run_json(std::string name, std::string device) {
  return json{{"name", std::move(name)}, {"rank", nullptr},         {"device", std::move(device)},
              {"precision", ""},         {"epochs", json::array()}, {"failure", nullptr},
              {"timeline", nullptr},     {"snapshots", json::array()}, {"reclaimed", json::array()},
              {"tree", nullptr}};
}

json document_json(std::string_view title, std::string_view source, json runs) {
  return json{{"format", "ndgc-report"}, {"version", 1},           {"title", title},
              {"source", source},        {"created_ms", now_ms()}, {"runs", std::move(runs)},
              {"live", nullptr}};
}

}  // namespace

std::string snapshot_entry(const debug::Snapshot& snapshot, std::string_view label) {
  return snapshot_json(snapshot, label).dump();
}

std::string tree_entry(const debug::Dump& detailed, const debug::Snapshot* taken_with) {
  std::unordered_map<std::string, std::string> workspace_of;  // uuid -> workspace name
  if (taken_with)
    for (const debug::ArrayRecord& a : taken_with->arrays)
      if (const workspace::Info* ws = taken_with->workspace_of(a)) workspace_of.emplace(a.uuid.to_string(), ws->name);
  return dump_node(detailed.root, workspace_of).dump();
}

std::string document_from_snapshots(const std::vector<debug::Snapshot>& snapshots,
                                    const std::vector<std::string>& labels, std::string_view title) {
  if (snapshots.empty()) throw InvalidArgument("report::document_from_snapshots: no snapshot given");
  if (!labels.empty() && labels.size() != snapshots.size())
    throw InvalidArgument(fmt::format("report::document_from_snapshots: {} labels for {} snapshots", labels.size(),
                                      snapshots.size()));
  json run = run_json("snapshots", run_device(snapshots.back().devices()));
  SiteTimeline timeline;
  for (std::size_t i = 0; i < snapshots.size(); ++i) {
    const debug::Snapshot& s = snapshots[i];
    const std::string label = labels.empty() || labels[i].empty() ? fmt::format("snapshot {}", i + 1) : labels[i];
    run["snapshots"].push_back(snapshot_json(s, label));
    const std::vector<debug::DeviceBytes> devices = s.devices();
    const std::uint64_t host = debug::bytes_on(devices, Device::cpu());
    timeline.add(double(i + 1), 0, s, host, s.bytes() - host);
  }
  run["timeline"] = json::parse(timeline.to_json("snapshot"));
  run["tree"] = snapshot_tree(snapshots.back());
  return document_json(title, "snapshots", json::array({std::move(run)})).dump();
}

std::string document_from_dump(const debug::Dump& dump, std::string_view label, std::string_view title) {
  std::map<GroupKey, Group> groups;
  dump_groups(dump.root, groups);
  json run = run_json(std::string(label), run_device(dump.root.devices_below()));
  run["snapshots"].push_back(json{{"label", label}, {"time_ms", 0}, {"groups", groups_json(groups)}});
  run["tree"] = dump_node(dump.root, {});
  return document_json(title, "dump", json::array({std::move(run)})).dump();
}

}  // namespace ndgc::report
