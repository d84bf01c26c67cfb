// Workspaces in the debug reports: snapshots tag the arrays a workspace holds
// and list the workspaces, diffs group them apart from manager memory, the
// whole-tree dump carries them in JSON, memory::stats sums them per device.
#include <doctest/doctest.h>

#include <string>

#include <ndgc/error.hpp>
#include <ndgc/workspace.hpp>

#include "debug_test_util.hpp"
#include "test_util.hpp"

using namespace ndgc;

namespace {

const debug::ArrayRecord* record_of(const debug::Snapshot& s, const Uuid& id) {
  for (const debug::ArrayRecord& a : s.arrays)
    if (a.uuid == id) return &a;
  return nullptr;
}

}  // namespace

TEST_CASE("a snapshot tags the arrays a workspace holds and lists the workspaces") {
  NDManager m = NDManager::new_base_manager("ws-snap");
  NDArray plain = m.ones({8});
  debug::Snapshot s;
  Uuid in_arena, spilled, view, bypass;
  {
    workspace::Scope ws = workspace::activate(test::fixed_arena(1024), "SNAP_WS");
    NDArray a = m.ones({16});
    NDArray big = m.ones({1024});  // 4 KiB: spills to ordinary memory, still the workspace's
    NDArray v = a.reshape({4, 4});
    NDArray out;
    {
      workspace::ScopeOut o;
      out = m.ones({4});
    }
    in_arena = a.uid();
    spilled = big.uid();
    view = v.uid();
    bypass = out.uid();
    s = debug::snapshot();
  }

  const workspace::Info* info = nullptr;
  for (const workspace::Info& w : s.workspaces)
    if (w.name == "SNAP_WS") info = &w;
  REQUIRE(info);
  CHECK(info->open);
  CHECK(info->cycle == 1);
  CHECK(info->device == Device::cpu());
  CHECK(info->stats.capacity == 1024);
  CHECK(info->stats.spilled_bytes == 4096);
  CHECK(info->id != 0);

  for (const Uuid& id : {in_arena, spilled, view}) {
    const debug::ArrayRecord* r = record_of(s, id);
    REQUIRE(r);
    REQUIRE(r->in_workspace());
    CHECK(s.workspace_of(*r)->name == "SNAP_WS");
  }
  const debug::ArrayRecord* p = record_of(s, plain.uid());
  REQUIRE(p);
  CHECK_FALSE(p->in_workspace());
  CHECK(s.workspace_of(*p) == nullptr);
  const debug::ArrayRecord* b = record_of(s, bypass);
  REQUIRE(b);
  CHECK_FALSE(b->in_workspace());
  CHECK(s.workspace_array_count() >= 3);

  // Text: the header counts them, their group ends with the workspace, and
  // the workspaces section follows the groups.
  const std::string text = s.to_text();
  CAPTURE(text);
  CHECK(text.find(" arrays in workspaces\n") != std::string::npos);
  CHECK(text.find("system/ws-snap") != std::string::npos);
  CHECK(text.find("in workspace 'SNAP_WS'") != std::string::npos);
  CHECK(text.find("'SNAP_WS' thread ") != std::string::npos);
  CHECK(text.find("open cycle 1: capacity 1.0 KiB") != std::string::npos);

  // JSON: a round trip keeps the workspaces and every array's tag.
  const debug::Snapshot back = debug::Snapshot::from_json(s.to_json());
  CHECK(back == s);
  workspace::destroy("SNAP_WS");
}

TEST_CASE("a snapshot without workspaces reads the same as before they were reported") {
  // Documents written before workspaces were reported have neither field.
  debug::Snapshot s;
  s.time_ms = 5;
  s.managers = {"system/x"};
  s.sites = {{"a.cpp", 3, "f"}};
  s.arrays = {{Uuid::random(), 0, 0, 16, 1}};
  std::string json = s.to_json();
  const std::string tail = ",\"array_workspaces\":[]";
  const std::size_t at = json.find(tail);
  REQUIRE(at != std::string::npos);
  json.erase(at, tail.size());
  const std::string ws_field = ",\"workspaces\":[]";
  const std::size_t at2 = json.find(ws_field);
  REQUIRE(at2 != std::string::npos);
  json.erase(at2, ws_field.size());
  CHECK(debug::Snapshot::from_json(json) == s);
  CHECK(s.to_text().find("workspaces") == std::string::npos);
}

TEST_CASE("Snapshot::from_json: a bad workspace tag is a DataError naming the field") {
  NDManager m = NDManager::new_base_manager("ws-json");
  std::string json;
  {
    workspace::Scope ws = workspace::activate(test::fixed_arena(1024), "JSON_WS");
    NDArray a = m.ones({4});
    debug::Snapshot s = debug::snapshot();
    // Keep only this test's array and workspace, so the row indices are known.
    std::erase_if(s.arrays, [&](const debug::ArrayRecord& r) { return r.uuid != a.uid(); });
    std::erase_if(s.workspaces, [](const workspace::Info& w) { return w.name != "JSON_WS"; });
    REQUIRE(s.arrays.size() == 1);
    REQUIRE(s.workspaces.size() == 1);
    s.arrays[0].workspace = 0;
    json = s.to_json();
    CHECK(debug::Snapshot::from_json(json) == s);
  }
  workspace::destroy("JSON_WS");

  auto with = [&](const std::string& from, const std::string& to) {
    std::string j = json;
    const std::size_t at = j.find(from);
    REQUIRE(at != std::string::npos);
    j.replace(at, from.size(), to);
    return j;
  };
  CHECK_THROWS_WITH_AS(debug::Snapshot::from_json(with("\"array_workspaces\":[[0,0]]", "\"array_workspaces\":[[0,3]]")),
                       doctest::Contains("array_workspaces[0].workspace: 3 is out of range (1 workspaces)"),
                       DataError);
  CHECK_THROWS_WITH_AS(debug::Snapshot::from_json(with("\"array_workspaces\":[[0,0]]", "\"array_workspaces\":[[9,0]]")),
                       doctest::Contains("array_workspaces[0].row: 9 is out of range (1 arrays)"), DataError);
  CHECK_THROWS_WITH_AS(debug::Snapshot::from_json(with("\"array_workspaces\":[[0,0]]", "\"array_workspaces\":[[0]]")),
                       doctest::Contains("array_workspaces[0]: expected a row of 2 values [row, workspace]"),
                       DataError);
  CHECK_THROWS_WITH_AS(debug::Snapshot::from_json(with("\"name\":\"JSON_WS\"", "\"name\":7")),
                       doctest::Contains("workspaces[0].name: expected a string"), DataError);
}

TEST_CASE("diff: arrays a workspace holds are grouped apart from manager memory") {
  NDManager m = NDManager::new_base_manager("ws-diff");
  const debug::Snapshot before = debug::snapshot();
  NDArray kept_by_manager = m.ones({32}); const int manager_line = __LINE__;
  workspace::Scope ws = workspace::activate(test::fixed_arena(4096), "DIFF_WS");
  NDArray in_ws = m.ones({32}); const int ws_line = __LINE__;
  const debug::Diff d = debug::diff(before, debug::snapshot());
  ws.close();
  workspace::destroy("DIFF_WS");

  auto group_at = [](const debug::Diff& diff, int line) -> const debug::DiffGroup* {
    for (const debug::DiffGroup& g : diff.groups)
      if (g.site.line == std::uint32_t(line) && g.manager == "system/ws-diff") return &g;
    return nullptr;
  };
  const debug::DiffGroup* g_manager = group_at(d, manager_line);
  const debug::DiffGroup* g_ws = group_at(d, ws_line);
  REQUIRE(g_manager);
  REQUIRE(g_ws);
  CHECK(g_manager->workspace.empty());
  CHECK(g_ws->workspace == "DIFF_WS");
  CHECK(g_ws->array_growth() == 1);
  CHECK(g_ws->byte_growth() == 128);

  const debug::Diff leaks = d.outside_workspaces();
  const debug::Diff kept = d.in_workspaces();
  CHECK(group_at(leaks, manager_line));
  CHECK_FALSE(group_at(leaks, ws_line));
  CHECK(group_at(kept, ws_line));
  CHECK_FALSE(group_at(kept, manager_line));
  CHECK(leaks.before == d.before);
  CHECK(kept.after == d.after);

  const std::string text = kept.to_text();
  CAPTURE(text);
  CHECK(text.find(test::site_text(__FILE__, ws_line) + "  in workspace 'DIFF_WS'") != std::string::npos);
  CHECK(debug::Diff::from_json(d.to_json()) == d);
}

TEST_CASE("the whole-tree dump carries the workspaces in JSON; one manager's dump does not") {
  NDManager m = NDManager::new_base_manager("ws-dump");
  {
    workspace::Scope ws = workspace::activate(test::fixed_arena(2048), "DUMP_JSON_WS");
    (void)m.ones({8});
  }
  std::ostringstream out;
  debug::dump(out, false, debug::Format::json);
  const debug::Dump whole = debug::Dump::from_json(out.str());
  bool found = false;
  for (const workspace::Info& w : whole.workspaces)
    if (w.name == "DUMP_JSON_WS") {
      found = true;
      CHECK_FALSE(w.open);
      CHECK(w.stats.capacity == 2048);
      CHECK(w.stats.cycles == 1);
      CHECK(w.stats.allocations == 1);
    }
  CHECK(found);
  CHECK(debug::Dump::from_json(whole.to_json()) == whole);
  CHECK(debug::inspect(m).workspaces.empty());
  workspace::destroy("DUMP_JSON_WS");
}

TEST_CASE("memory::stats sums the workspaces of its device: capacity, in use, spilled") {
  const memory::Stats base = memory::stats(Device::cpu());
  NDManager m = NDManager::new_base_manager("ws-stats");
  {
    workspace::Scope ws = workspace::activate(test::fixed_arena(4096), "STATS_WS");
    NDArray a = m.ones({64});    // 256 B in the arena
    NDArray b = m.ones({2048});  // 8 KiB: spills
    const memory::Stats in = memory::stats(Device::cpu());
    CHECK(in.workspace_capacity_bytes - base.workspace_capacity_bytes == 4096);
    CHECK(in.workspace_used_bytes - base.workspace_used_bytes == 256);
    CHECK(in.workspace_spilled_bytes - base.workspace_spilled_bytes == 8192);
  }
  const memory::Stats after_cycle = memory::stats(Device::cpu());
  CHECK(after_cycle.workspace_capacity_bytes - base.workspace_capacity_bytes == 4096);
  // block_left recycles the arena when the next cycle begins: still held.
  CHECK(after_cycle.workspace_used_bytes - base.workspace_used_bytes == 256);
  workspace::destroy("STATS_WS");
  const memory::Stats gone = memory::stats(Device::cpu());
  CHECK(gone.workspace_capacity_bytes == base.workspace_capacity_bytes);
  CHECK(gone.workspace_used_bytes == base.workspace_used_bytes);
  CHECK(gone.workspace_spilled_bytes == base.workspace_spilled_bytes);
}
