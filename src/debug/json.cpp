// to_json() / from_json(): the machine-readable form of every debug report.
//
// Each document is an object that names itself — {"format": "ndgc.snapshot",
// "version": 1, ...} — so a tool (or from_json) fed the wrong file says so
// instead of misreading it. Writing then reading gives an equal value: every
// field of the C++ value is written, and derived figures (totals, growth) are
// written for tools' convenience but recomputed, not trusted, on reading.
// Reading checks everything and throws DataError naming the document, the
// path of the bad field ("arrays[3].uuid") and what was expected.
//
// nlohmann-json is private to the library: the public API passes strings.
// Thread-safety: pure functions of their values.
#include <cstdint>
#include <span>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ndgc/debug.hpp"
#include "ndgc/error.hpp"

namespace ndgc::debug {

using nlohmann::json;

namespace {

constexpr int kVersion = 1;
// The columns of a snapshot's "arrays" rows.
constexpr const char* kArrayFields[] = {"uuid", "manager", "site", "bytes", "handles"};

// ---- writing ------------------------------------------------------------------------

json site_json(const SiteInfo& s) { return json{{"file", s.file}, {"line", s.line}, {"function", s.function}}; }

json header(const char* format) { return json{{"format", format}, {"version", kVersion}}; }

std::string text(const json& j, int indent) { return j.dump(indent); }

json shape_json(const Shape& s) {
  json dims = json::array();
  for (std::int64_t d : s) dims.push_back(d);
  return dims;
}

json devices_json(const std::vector<DeviceBytes>& list) {
  json out = json::array();
  for (const DeviceBytes& d : list)
    out.push_back(json{{"device", d.device.to_string()}, {"arrays", d.arrays}, {"bytes", d.bytes}});
  return out;
}

json manager_json(const ManagerInfo& m, bool detailed) {
  json j{{"name", m.name},       {"path", m.path},   {"uuid", m.uuid.to_string()},
         {"device", m.device.to_string()},           {"open", m.open},
         {"capped", m.capped},   {"array_count", m.array_count},
         {"bytes", m.bytes},     {"devices", devices_json(m.devices)}};
  if (detailed) {
    json arrays = json::array();
    for (const ArrayInfo& a : m.arrays)
      arrays.push_back(json{{"uuid", a.uuid.to_string()},
                            {"name", a.name},
                            {"shape", shape_json(a.shape)},
                            {"dtype", std::string(to_string(a.dtype))},
                            {"nbytes", a.nbytes},
                            {"bytes", a.bytes},
                            {"view", a.view},
                            {"borrowed", a.borrowed},
                            {"site", site_json(a.site)},
                            {"handles", a.handles},
                            {"device", a.device.to_string()}});
    j["arrays"] = std::move(arrays);
  }
  json children = json::array();
  for (const ManagerInfo& c : m.children) children.push_back(manager_json(c, detailed));
  j["children"] = std::move(children);
  return j;
}

// ---- reading ------------------------------------------------------------------------

// A JSON value and where it sits in the document, so that every error says
// which field is wrong.
class In {
 public:
  In(const json& v, std::string path, const char* op) : v_(v), path_(std::move(path)), op_(op) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw DataError(fmt::format("{}: {}: {}", op_, path_.empty() ? "the document" : path_, what));
  }

  bool has(const char* key) const { return v_.is_object() && v_.contains(key); }
  In operator[](const char* key) const {
    if (!v_.is_object()) fail(fmt::format("expected an object, found {}", v_.type_name()));
    auto it = v_.find(key);
    if (it == v_.end()) fail(fmt::format("missing field '{}'", key));
    return In(*it, path_.empty() ? key : path_ + "." + key, op_);
  }
  std::size_t size() const {
    if (!v_.is_array()) fail(fmt::format("expected an array, found {}", v_.type_name()));
    return v_.size();
  }
  In operator[](std::size_t i) const { return In(v_.at(i), fmt::format("{}[{}]", path_, i), op_); }
  // Element `i` of a fixed-length row, named for messages ("arrays[3].uuid").
  In column(std::size_t i, std::span<const char* const> names) const {
    if (size() != names.size())
      fail(fmt::format("expected a row of {} values [{}], found {}", names.size(), fmt::join(names, ", "),
                       v_.dump()));
    return In(v_[i], path_ + "." + names[i], op_);
  }

  std::uint64_t u64() const {
    if (!v_.is_number_unsigned()) fail(fmt::format("expected a non-negative integer, found {}", v_.dump()));
    return v_.get<std::uint64_t>();
  }
  std::uint32_t u32() const {
    std::uint64_t v = u64();
    if (v > 0xffffffffu) fail(fmt::format("{} is out of range (at most 4294967295)", v));
    return std::uint32_t(v);
  }
  std::int64_t i64() const {
    if (v_.is_number_unsigned() && v_.get<std::uint64_t>() > std::uint64_t(INT64_MAX))
      fail(fmt::format("{} is out of range", v_.dump()));
    if (!v_.is_number_integer()) fail(fmt::format("expected an integer, found {}", v_.dump()));
    return v_.get<std::int64_t>();
  }
  bool boolean() const {
    if (!v_.is_boolean()) fail(fmt::format("expected true or false, found {}", v_.dump()));
    return v_.get<bool>();
  }
  std::string str() const {
    if (!v_.is_string()) fail(fmt::format("expected a string, found {}", v_.dump()));
    return v_.get<std::string>();
  }
  // An index into a table of `count` entries named `table`.
  std::uint32_t index(std::size_t count, const char* table) const {
    std::uint32_t i = u32();
    if (i >= count) fail(fmt::format("{} is out of range ({} {})", i, count, table));
    return i;
  }

  Uuid uuid() const {
    std::string s = str();
    try {
      return Uuid::parse(s);
    } catch (const Error&) {
      fail(fmt::format("'{}' is not a UUID", s));
    }
  }
  DataType dtype() const {
    std::string s = str();
    for (DataType t : {DataType::float32, DataType::float64, DataType::int32, DataType::int64, DataType::uint8,
                       DataType::boolean, DataType::float16, DataType::bfloat16})
      if (to_string(t) == s) return t;
    fail(fmt::format("'{}' is not a dtype (float32, float64, int32, int64, uint8, boolean, float16, bfloat16)", s));
  }
  Device device() const {
    std::string s = str();
    if (s == "cpu()") return Device::cpu();
    int index = -1;
    std::size_t used = 0;
    if (s.size() > 5 && s.compare(0, 4, "gpu(") == 0 && s.back() == ')') {
      try {
        index = std::stoi(s.substr(4, s.size() - 5), &used);
      } catch (const std::exception&) {
        index = -1;
      }
    }
    if (index < 0 || index >= kMaxGpus || used != s.size() - 5)
      fail(fmt::format("'{}' is not a device (cpu() or gpu(N))", s));
    return Device::gpu(index);
  }
  Shape shape() const {
    std::size_t n = size();
    if (n > std::size_t(kMaxRank)) fail(fmt::format("rank {} exceeds the maximum rank {}", n, kMaxRank));
    std::vector<std::int64_t> dims;
    for (std::size_t i = 0; i < n; ++i) {
      std::int64_t d = (*this)[i].i64();
      if (d < 0) (*this)[i].fail(fmt::format("dimension {} is negative", d));
      dims.push_back(d);
    }
    return Shape(std::span<const std::int64_t>(dims));
  }
  SiteInfo site() const {
    return SiteInfo{(*this)["file"].str(), (*this)["line"].u32(), (*this)["function"].str()};
  }

 private:
  const json& v_;
  std::string path_;
  const char* op_;
};

// Parses `text` and checks the format tag and version.
json parse(std::string_view text, const char* format, const char* op) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    throw DataError(fmt::format("{}: not valid JSON: {}", op, e.what()));
  }
  In in(doc, "", op);
  std::string found = in["format"].str();
  if (found != format) in["format"].fail(fmt::format("expected \"{}\", found \"{}\"", format, found));
  std::uint64_t version = in["version"].u64();
  if (version != std::uint64_t(kVersion))
    in["version"].fail(fmt::format("version {} is not one this ndgc reads ({})", version, kVersion));
  return doc;
}

std::vector<DeviceBytes> read_devices(const In& in) {
  std::vector<DeviceBytes> out;
  for (std::size_t i = 0, n = in.size(); i < n; ++i) {
    In d = in[i];
    out.push_back(DeviceBytes{d["device"].device(), d["arrays"].u64(), d["bytes"].u64()});
  }
  return out;
}

// Documents written before devices were reported: everything on `device`.
std::vector<DeviceBytes> all_on(Device device, std::uint64_t arrays, std::uint64_t bytes) {
  if (arrays == 0) return {};
  return {DeviceBytes{device, arrays, bytes}};
}

// Managers nest one level per sub-manager; reading recurses per level, so a
// hostile document's depth is bounded before it can exhaust the stack.
constexpr int kMaxManagerDepth = 1000;

ManagerInfo read_manager(const In& in, bool detailed, int depth = 0) {
  if (depth > kMaxManagerDepth) in.fail(fmt::format("managers nested more than {} levels deep", kMaxManagerDepth));
  ManagerInfo m;
  m.name = in["name"].str();
  m.path = in["path"].str();
  m.uuid = in["uuid"].uuid();
  m.device = in["device"].device();
  m.open = in["open"].boolean();
  m.capped = in["capped"].boolean();
  m.array_count = in["array_count"].u64();
  m.bytes = in["bytes"].u64();
  m.devices = in.has("devices") ? read_devices(in["devices"]) : all_on(m.device, m.array_count, m.bytes);
  if (detailed) {
    In arrays = in["arrays"];
    for (std::size_t i = 0, n = arrays.size(); i < n; ++i) {
      In a = arrays[i];
      m.arrays.push_back(ArrayInfo{a["uuid"].uuid(), a["name"].str(), a["shape"].shape(), a["dtype"].dtype(),
                                   a["nbytes"].u64(), a["bytes"].u64(), a["view"].boolean(),
                                   a["borrowed"].boolean(), a["site"].site(), a["handles"].u32(),
                                   a.has("device") ? a["device"].device() : m.device});
    }
  }
  In children = in["children"];
  for (std::size_t i = 0, n = children.size(); i < n; ++i) m.children.push_back(read_manager(children[i], detailed, depth + 1));
  return m;
}

std::vector<SiteInfo> read_sites(const In& in) {
  std::vector<SiteInfo> sites;
  for (std::size_t i = 0, n = in.size(); i < n; ++i) sites.push_back(in[i].site());
  return sites;
}

std::vector<std::string> read_strings(const In& in) {
  std::vector<std::string> out;
  for (std::size_t i = 0, n = in.size(); i < n; ++i) out.push_back(in[i].str());
  return out;
}

json workspaces_json(const std::vector<workspace::Info>& list) {
  json out = json::array();
  for (const workspace::Info& w : list) {
    const workspace::Stats& s = w.stats;
    out.push_back(json{{"id", w.id},
                       {"name", w.name},
                       {"thread", w.thread},
                       {"device", w.device.to_string()},
                       {"open", w.open},
                       {"cycle", w.cycle},
                       {"learned_size", w.learned_size},
                       {"capacity", s.capacity},
                       {"used", s.used},
                       {"peak_used", s.peak_used},
                       {"spilled_bytes", s.spilled_bytes},
                       {"cycles", s.cycles},
                       {"allocations", s.allocations},
                       {"reallocations", s.reallocations}});
  }
  return out;
}

// Documents written before workspaces were reported have none.
std::vector<workspace::Info> read_workspaces(const In& doc) {
  std::vector<workspace::Info> out;
  if (!doc.has("workspaces")) return out;
  In list = doc["workspaces"];
  for (std::size_t i = 0, n = list.size(); i < n; ++i) {
    In w = list[i];
    workspace::Info info;
    info.id = w["id"].u64();
    info.name = w["name"].str();
    info.thread = w["thread"].u64();
    info.device = w["device"].device();
    info.open = w["open"].boolean();
    info.cycle = w["cycle"].u64();
    info.learned_size = w["learned_size"].u64();
    info.stats = {w["capacity"].u64(), w["used"].u64(),   w["peak_used"].u64(),    w["spilled_bytes"].u64(),
                  w["cycles"].u64(),   w["allocations"].u64(), w["reallocations"].u64()};
    out.push_back(std::move(info));
  }
  return out;
}

Diff::Totals read_totals(const In& in) {
  Diff::Totals t{in["time_ms"].i64(), in["arrays"].u64(), in["bytes"].u64(), {}};
  t.devices = in.has("devices") ? read_devices(in["devices"]) : all_on(Device::cpu(), t.arrays, t.bytes);
  return t;
}

json totals_json(const Diff::Totals& t) {
  return json{{"time_ms", t.time_ms}, {"arrays", t.arrays}, {"bytes", t.bytes}, {"devices", devices_json(t.devices)}};
}

}  // namespace

// ---- Dump ---------------------------------------------------------------------------------

std::string Dump::to_json(int indent) const {
  json j = header("ndgc.dump");
  j["detailed"] = detailed;
  j["root"] = manager_json(root, detailed);
  j["workspaces"] = workspaces_json(workspaces);
  return text(j, indent);
}

Dump Dump::from_json(std::string_view json_text) {
  const char* op = "debug::Dump::from_json";
  json doc = parse(json_text, "ndgc.dump", op);
  In in(doc, "", op);
  Dump d;
  d.detailed = in["detailed"].boolean();
  d.root = read_manager(in["root"], d.detailed);
  d.workspaces = read_workspaces(in);
  return d;
}

// ---- Snapshot ------------------------------------------------------------------------------

std::string Snapshot::to_json(int indent) const {
  json j = header("ndgc.snapshot");
  j["time_ms"] = time_ms;
  j["totals"] = json{{"arrays", arrays.size()}, {"bytes", bytes()}, {"orphans", orphan_count()}};
  j["managers"] = managers;
  json site_list = json::array();
  for (const SiteInfo& s : sites) site_list.push_back(site_json(s));
  j["sites"] = std::move(site_list);
  // One row per array, not one object: an object per record makes writing
  // and reading several times slower for 100k arrays, and tools read rows
  // just as easily ("array_fields" names the columns).
  j["array_fields"] = kArrayFields;
  json records = json::array();
  records.get_ref<json::array_t&>().reserve(arrays.size());
  // Most arrays live in ordinary memory on the CPU: those in a workspace
  // are listed apart, as [row, workspace index] pairs, and those on another
  // device as [row, device] pairs (so the rows keep the columns older
  // readers expect).
  json in_workspaces = json::array(), on_devices = json::array();
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const ArrayRecord& a = arrays[i];
    records.push_back(json::array({a.uuid.to_string(), a.manager, a.site, a.bytes, a.handles}));
    if (a.in_workspace()) in_workspaces.push_back(json::array({i, a.workspace}));
    if (!a.device.is_cpu()) on_devices.push_back(json::array({i, a.device.to_string()}));
  }
  j["arrays"] = std::move(records);
  j["workspaces"] = workspaces_json(workspaces);
  j["array_workspaces"] = std::move(in_workspaces);
  j["array_devices"] = std::move(on_devices);
  j["totals"]["devices"] = devices_json(devices());
  return text(j, indent);
}

Snapshot Snapshot::from_json(std::string_view json_text) {
  const char* op = "debug::Snapshot::from_json";
  json doc = parse(json_text, "ndgc.snapshot", op);
  In in(doc, "", op);
  Snapshot s;
  s.time_ms = in["time_ms"].i64();
  s.managers = read_strings(in["managers"]);
  s.sites = read_sites(in["sites"]);
  In arrays = in["arrays"];
  std::size_t n = arrays.size();
  s.arrays.reserve(n);
  std::span<const char* const> names(kArrayFields);
  for (std::size_t i = 0; i < n; ++i) {
    In a = arrays[i];
    s.arrays.push_back(ArrayRecord{a.column(0, names).uuid(),
                                   a.column(1, names).index(s.managers.size(), "managers"),
                                   a.column(2, names).index(s.sites.size(), "sites"), a.column(3, names).u64(),
                                   a.column(4, names).u32(), kNoWorkspace, Device::cpu()});  // both set below when present
  }
  s.workspaces = read_workspaces(in);
  if (in.has("array_workspaces")) {
    In pairs = in["array_workspaces"];
    static constexpr const char* kPair[] = {"row", "workspace"};
    for (std::size_t i = 0, count = pairs.size(); i < count; ++i) {
      In p = pairs[i];
      std::uint32_t row = p.column(0, kPair).index(n, "arrays");
      s.arrays[row].workspace = p.column(1, kPair).index(s.workspaces.size(), "workspaces");
    }
  }
  if (in.has("array_devices")) {  // documents before devices: every array on the CPU
    In pairs = in["array_devices"];
    static constexpr const char* kPair[] = {"row", "device"};
    for (std::size_t i = 0, count = pairs.size(); i < count; ++i) {
      In p = pairs[i];
      std::uint32_t row = p.column(0, kPair).index(n, "arrays");
      s.arrays[row].device = p.column(1, kPair).device();
    }
  }
  return s;
}

// ---- Diff -------------------------------------------------------------------------------------

std::string Diff::to_json(int indent) const {
  json j = header("ndgc.diff");
  j["before"] = totals_json(before);
  j["after"] = totals_json(after);
  j["arrays_growth"] = array_growth();
  j["bytes_growth"] = byte_growth();
  json list = json::array();
  for (const DiffGroup& g : groups)
    list.push_back(json{{"manager", g.manager},
                        {"site", site_json(g.site)},
                        {"arrays_before", g.arrays_before},
                        {"arrays_after", g.arrays_after},
                        {"bytes_before", g.bytes_before},
                        {"bytes_after", g.bytes_after},
                        {"arrays_growth", g.array_growth()},
                        {"bytes_growth", g.byte_growth()},
                        {"workspace", g.workspace},
                        {"device", g.device.to_string()}});
  j["groups"] = std::move(list);
  return text(j, indent);
}

Diff Diff::from_json(std::string_view json_text) {
  const char* op = "debug::Diff::from_json";
  json doc = parse(json_text, "ndgc.diff", op);
  In in(doc, "", op);
  Diff d;
  d.before = read_totals(in["before"]);
  d.after = read_totals(in["after"]);
  In groups = in["groups"];
  for (std::size_t i = 0, n = groups.size(); i < n; ++i) {
    In g = groups[i];
    d.groups.push_back(DiffGroup{g["manager"].str(), g["site"].site(), g["arrays_before"].u64(),
                                 g["arrays_after"].u64(), g["bytes_before"].u64(), g["bytes_after"].u64(),
                                 g.has("workspace") ? g["workspace"].str() : std::string(),
                                 g.has("device") ? g["device"].device() : Device::cpu()});
  }
  return d;
}

// ---- OrphanReport and LeakedHandles: groups by site ------------------------------------------

namespace {

std::string site_groups_json(const char* format, std::uint64_t arrays, std::uint64_t bytes,
                             const std::vector<OrphanGroup>& groups, int indent) {
  json j = header(format);
  j["arrays"] = arrays;
  j["bytes"] = bytes;
  json list = json::array();
  for (const OrphanGroup& g : groups) {
    json uuids = json::array();
    for (const Uuid& u : g.uuids) uuids.push_back(u.to_string());
    list.push_back(json{{"site", site_json(g.site)},
                        {"arrays", g.arrays},
                        {"bytes", g.bytes},
                        {"managers", g.managers},
                        {"uuids", std::move(uuids)}});
  }
  j["groups"] = std::move(list);
  return text(j, indent);
}

template <class Report>
Report site_groups_from_json(std::string_view json_text, const char* format, const char* op) {
  json doc = parse(json_text, format, op);
  In in(doc, "", op);
  Report r;
  r.arrays = in["arrays"].u64();
  r.bytes = in["bytes"].u64();
  In groups = in["groups"];
  for (std::size_t i = 0, n = groups.size(); i < n; ++i) {
    In g = groups[i];
    OrphanGroup out{g["site"].site(), g["arrays"].u64(), g["bytes"].u64(), read_strings(g["managers"]), {}};
    In uuids = g["uuids"];
    for (std::size_t k = 0, m = uuids.size(); k < m; ++k) out.uuids.push_back(uuids[k].uuid());
    r.groups.push_back(std::move(out));
  }
  return r;
}

}  // namespace

std::string OrphanReport::to_json(int indent) const {
  return site_groups_json("ndgc.orphans", arrays, bytes, groups, indent);
}

OrphanReport OrphanReport::from_json(std::string_view json_text) {
  return site_groups_from_json<OrphanReport>(json_text, "ndgc.orphans", "debug::OrphanReport::from_json");
}

std::string LeakedHandles::to_json(int indent) const {
  return site_groups_json("ndgc.leaked_handles", arrays, bytes, groups, indent);
}

LeakedHandles LeakedHandles::from_json(std::string_view json_text) {
  return site_groups_from_json<LeakedHandles>(json_text, "ndgc.leaked_handles", "debug::LeakedHandles::from_json");
}

}  // namespace ndgc::debug
