// The report document's pieces: a snapshot's groups, the tree and its
// sample, whole documents from snapshots and dumps.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <ndgc/ndgc.hpp>
#include <ndgc/report.hpp>

#include "test_util.hpp"

namespace ndgc {
namespace {

using nlohmann::json;

// The group of `entry` at (manager path suffix, site line), or null.
const json* group_at(const json& entry, const std::string& manager_suffix, std::uint32_t line) {
  for (const json& g : entry["groups"]) {
    const std::string m = g["manager"], site = g["site"];
    if (m.ends_with(manager_suffix) && site.ends_with(":" + std::to_string(line))) return &g;
  }
  return nullptr;
}

const json* child_named(const json& node, const std::string& name) {
  for (const json& c : node["children"])
    if (c["name"] == name) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("report::snapshot_entry: arrays grouped by manager and site, with bytes and orphans") {
  test::AutoClose off(false);
  NDManager m = NDManager::new_base_manager("entry_test");
  std::vector<NDArray> kept;
  std::uint32_t line_a = 0, line_b = 0;
  for (int i = 0; i < 3; ++i) {
    line_a = __LINE__ + 1;
    kept.push_back(m.zeros(Shape{4}));  // 16 bytes each
  }
  line_b = __LINE__ + 1;
  { NDArray dropped = m.ones(Shape{2}); }  // an orphan: its handle is gone, the manager keeps it
  const json entry = json::parse(report::snapshot_entry(debug::snapshot(), "now"));
  CHECK(entry["label"] == "now");
  const json* a = group_at(entry, "entry_test", line_a);
  const json* b = group_at(entry, "entry_test", line_b);
  REQUIRE(a);
  REQUIRE(b);
  CHECK((*a)["arrays"] == 3);
  CHECK((*a)["bytes"] == 48);
  CHECK((*a)["orphans"] == 0);
  CHECK((*a)["workspace"] == "");
  CHECK((*a)["device"] == "cpu");
  CHECK((*b)["orphans"] == 1);
}

TEST_CASE("report::tree_entry: bytes below each manager, at most kTreeItemsPerSite arrays per site") {
  test::AutoClose off(false);
  NDManager m = NDManager::new_base_manager("tree_test");
  NDManager sub = m.new_sub_manager("inner");
  std::vector<NDArray> kept;
  for (std::size_t i = 0; i < report::kTreeItemsPerSite + 5; ++i) kept.push_back(sub.zeros(Shape{2, 3}));
  kept.push_back(m.zeros(Shape{1}));
  const json tree = json::parse(report::tree_entry(debug::inspect(NDManager::system(), true)));
  const json* mine = child_named(tree, "tree_test");
  REQUIRE(mine);
  const json* inner = child_named(*mine, "inner");
  REQUIRE(inner);
  CHECK((*inner)["arrays"] == report::kTreeItemsPerSite + 5);
  CHECK((*inner)["items"].size() == report::kTreeItemsPerSite);
  CHECK((*inner)["items_left_out"] == 5);
  CHECK((*inner)["items"][0]["shape"] == json::array({2, 3}));
  CHECK((*inner)["items"][0]["dtype"] == "float32");
  CHECK((*inner)["items"][0]["handles"] == 1);
  CHECK((*mine)["bytes"] == 4);
  CHECK((*mine)["bytes_below"] == 4 + 24 * (report::kTreeItemsPerSite + 5));
  CHECK((*mine)["arrays_below"] == report::kTreeItemsPerSite + 6);
}

TEST_CASE("report::tree_entry: arrays in a workspace's arena are marked with its name") {
  test::AutoClose off(false);
  NDManager m = NDManager::new_base_manager("ws_tree_test");
  {
    workspace::Scope ws = workspace::activate(test::fixed_arena(1 << 16), "REPORT_WS");
    NDArray inside = m.zeros(Shape{8});
    const debug::Snapshot snap = debug::snapshot();
    const json tree = json::parse(report::tree_entry(debug::inspect(NDManager::system(), true), &snap));
    const json* node = child_named(tree, "ws_tree_test");
    REQUIRE(node);
    CHECK((*node)["workspace_bytes"] == 32);
    CHECK((*node)["items"][0]["workspace"] == "REPORT_WS");
  }
  workspace::destroy("REPORT_WS");
}

TEST_CASE("report::SiteTimeline: a small growing site is kept beside large constant ones") {
  test::AutoClose off(false);
  NDManager m = NDManager::new_base_manager("timeline_test");
  std::vector<NDArray> big, leak;
  for (int i = 0; i < 8; ++i) big.push_back(m.zeros(Shape{1024}));  // one site, 32 KiB
  report::SiteTimeline timeline;
  std::uint32_t leak_line = 0;
  for (int step = 1; step <= 4; ++step) {
    leak_line = __LINE__ + 1;
    leak.push_back(m.zeros(Shape{1}));
    timeline.add(step, 1, debug::snapshot(), 0, 0);
  }
  const json t = json::parse(timeline.to_json("training step", 1));
  REQUIRE(t["x"].size() == 4);
  REQUIRE(t["sites"].size() >= 1);
  const std::string first = t["sites"][0]["site"];
  CHECK(first.ends_with(":" + std::to_string(leak_line)));  // one place: the grower, not the largest
  CHECK(t["sites"][0]["bytes"] == json::array({4, 8, 12, 16}));
  CHECK(t["sites"].back()["site"] == "other");
}

TEST_CASE("report::document_from_snapshots: one run with a snapshot per input, a timeline and a tree") {
  test::AutoClose off(false);
  NDManager m = NDManager::new_base_manager("doc_test");
  const debug::Snapshot before = debug::snapshot();
  std::vector<NDArray> kept{m.zeros(Shape{10}), m.zeros(Shape{10})};
  const debug::Snapshot after = debug::snapshot();
  const json doc = json::parse(report::document_from_snapshots({before, after}, {"before", ""}, "doc"));
  CHECK(doc["format"] == "ndgc-report");
  CHECK(doc["source"] == "snapshots");
  REQUIRE(doc["runs"].size() == 1);
  const json& run = doc["runs"][0];
  CHECK(run["snapshots"][0]["label"] == "before");
  CHECK(run["snapshots"][1]["label"] == "snapshot 2");
  CHECK(run["timeline"]["x"].size() == 2);
  CHECK(run["timeline"]["x_label"] == "snapshot");
  REQUIRE(child_named(run["tree"], "doc_test"));
  CHECK((*child_named(run["tree"], "doc_test"))["bytes"] == 80);
}

TEST_CASE("report::document_from_snapshots: no snapshot, or labels that do not match, is InvalidArgument") {
  CHECK_THROWS_WITH_AS(report::document_from_snapshots({}, {}, "t"), doctest::Contains("no snapshot"), InvalidArgument);
  CHECK_THROWS_WITH_AS(report::document_from_snapshots({debug::Snapshot{}}, {"a", "b"}, "t"),
                       doctest::Contains("2 labels for 1 snapshots"), InvalidArgument);
}

TEST_CASE("report::document_from_dump: its tree, and its arrays as one snapshot") {
  test::AutoClose off(false);
  NDManager m = NDManager::new_base_manager("dump_doc_test");
  NDArray a = m.zeros(Shape{3});
  const json doc = json::parse(report::document_from_dump(debug::inspect(NDManager::system(), true), "saved", "t"));
  CHECK(doc["source"] == "dump");
  const json& run = doc["runs"][0];
  CHECK(run["name"] == "saved");
  REQUIRE(run["snapshots"].size() == 1);
  bool found = false;
  for (const json& g : run["snapshots"][0]["groups"])
    found = found || (std::string(g["manager"]).ends_with("dump_doc_test") && g["bytes"] == 12);
  CHECK(found);
  // A summary dump knows no sites: its arrays are one group per manager, said so.
  const json summary = json::parse(report::document_from_dump(debug::inspect(m, false), "summary", "t"));
  CHECK(summary["runs"][0]["snapshots"][0]["groups"][0]["site"] == "(sites not in a summary dump)");
}

}  // namespace ndgc
