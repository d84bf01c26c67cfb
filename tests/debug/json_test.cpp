// JSON for every debug report: round trips give equal values, and malformed
// input throws DataError naming what is wrong.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "debug_test_util.hpp"
#include "test_util.hpp"

using namespace ndgc;
using nlohmann::json;

namespace {

// Two snapshots around a small leak, with views, orphans and sub-managers.
struct Scene {
  NDManager model = NDManager::new_base_manager("json-model");
  std::vector<NDArray> kept;
  debug::Snapshot before, after;
  Scene() {
    kept.push_back(model.zeros({3, 4}, DataType::float64));
    kept.push_back(kept.back().reshape({12}));
    kept.back().set_name("flat \"view\"");
    before = debug::snapshot();
    NDManager step = model.new_sub_manager("step");
    for (int i = 0; i < 5; ++i) {
      kept.push_back(model.ones({i + 1}, DataType::int32));
      NDArray dropped = model.zeros({2});
      kept.push_back(step.ret(step.ones({1})));  // into model
    }
    after = debug::snapshot();
  }
};

}  // namespace

TEST_CASE("snapshot -> JSON -> snapshot gives an equal snapshot, and equal diffs") {
  Scene scene;
  std::string text = scene.after.to_json();
  debug::Snapshot back = debug::Snapshot::from_json(text);
  CHECK(back == scene.after);
  CHECK(back.to_json() == text);
  CHECK(debug::Snapshot::from_json(scene.after.to_json(2)) == scene.after);  // indentation is free

  debug::Snapshot before_back = debug::Snapshot::from_json(scene.before.to_json());
  debug::Diff d = debug::diff(scene.before, scene.after);
  CHECK(debug::diff(before_back, back) == d);
  CHECK_FALSE(d.groups.empty());

  json j = json::parse(text);  // what tools see
  CHECK(j["format"] == "ndgc.snapshot");
  CHECK(j["version"] == 1);
  CHECK(j["totals"]["arrays"] == scene.after.arrays.size());
  CHECK(j["totals"]["bytes"] == scene.after.bytes());
  CHECK(j["array_fields"] == json::array({"uuid", "manager", "site", "bytes", "handles"}));
  const json& a0 = j["arrays"][0];  // a row in that order
  CHECK(a0[0].get<std::string>() == scene.after.arrays[0].uuid.to_string());
  CHECK(j["managers"][a0[1].get<std::size_t>()] == scene.after.manager_of(scene.after.arrays[0]));
  CHECK(j["sites"][a0[2].get<std::size_t>()]["line"] == scene.after.site_of(scene.after.arrays[0]).line);
  CHECK(a0[3] == scene.after.arrays[0].bytes);
  CHECK(a0[4] == scene.after.arrays[0].handles);
}

TEST_CASE("diff, orphan report and dump round-trip through JSON") {
  Scene scene;
  debug::Diff d = debug::diff(scene.before, scene.after);
  CHECK(debug::Diff::from_json(d.to_json()) == d);
  json dj = json::parse(d.to_json());
  CHECK(dj["format"] == "ndgc.diff");
  CHECK(dj["bytes_growth"] == d.byte_growth());
  CHECK(dj["groups"][0]["bytes_growth"] == d.groups[0].byte_growth());

  debug::OrphanReport r = debug::orphans();
  CHECK(r.arrays >= 5);
  CHECK(debug::OrphanReport::from_json(r.to_json(2)) == r);

  for (bool detailed : {false, true}) {
    debug::Dump dump = debug::inspect(scene.model, detailed);
    debug::Dump back = debug::Dump::from_json(dump.to_json());
    CHECK(back == dump);
    CHECK(back.to_text() == dump.to_text());
  }
  debug::Dump full = debug::inspect(scene.model, true);
  json tree = json::parse(debug::dump(scene.model, true, debug::Format::json));
  CHECK(tree["format"] == "ndgc.dump");
  CHECK(tree["root"]["path"] == "system/json-model");
  CHECK(tree["root"]["arrays"].size() == full.root.arrays.size());
  CHECK(tree["root"]["arrays"][1]["name"] == "flat \"view\"");
  CHECK(tree["root"]["arrays"][1]["view"] == true);
  CHECK(tree["root"]["arrays"][0]["shape"] == json::array({3, 4}));
  CHECK(tree["root"]["arrays"][0]["dtype"] == "float64");
  CHECK(tree["root"]["children"].size() == 0);  // step closed
}

TEST_CASE("from_json of malformed input throws DataError naming the problem") {
  using debug::Snapshot;
  CHECK_THROWS_WITH_AS(Snapshot::from_json("{\"format\": "),
                       doctest::Contains("debug::Snapshot::from_json: not valid JSON"), DataError);
  CHECK_THROWS_WITH_AS(Snapshot::from_json("[1, 2]"), doctest::Contains("expected an object, found array"),
                       DataError);
  CHECK_THROWS_WITH_AS(Snapshot::from_json("{}"), doctest::Contains("missing field 'format'"), DataError);

  NDManager m = NDManager::new_base_manager("json-errors");
  NDArray a = m.zeros({2});
  json good = json::parse(debug::snapshot().to_json());
  REQUIRE(good["arrays"].size() > 0);

  auto bad = [&](auto edit) {
    json j = good;
    edit(j);
    return j.dump();
  };
  CHECK_THROWS_WITH_AS(Snapshot::from_json(bad([](json& j) { j["format"] = "ndgc.diff"; })),
                       doctest::Contains("format: expected \"ndgc.snapshot\", found \"ndgc.diff\""), DataError);
  CHECK_THROWS_WITH_AS(debug::Diff::from_json(good.dump()),
                       doctest::Contains("debug::Diff::from_json: format: expected \"ndgc.diff\""), DataError);
  CHECK_THROWS_WITH_AS(Snapshot::from_json(bad([](json& j) { j["version"] = 2; })),
                       doctest::Contains("version: version 2 is not one this ndgc reads (1)"), DataError);
  CHECK_THROWS_WITH_AS(Snapshot::from_json(bad([](json& j) { j["arrays"][0].erase(4); })),
                       doctest::Contains("arrays[0]: expected a row of 5 values [uuid, manager, site, bytes, "
                                         "handles], found ["),
                       DataError);
  CHECK_THROWS_WITH_AS(Snapshot::from_json(bad([](json& j) { j["arrays"][0] = json::object(); })),
                       doctest::Contains("arrays[0]: expected an array, found object"), DataError);
  CHECK_THROWS_WITH_AS(Snapshot::from_json(bad([](json& j) { j["arrays"][0][0] = "not-a-uuid"; })),
                       doctest::Contains("arrays[0].uuid: 'not-a-uuid' is not a UUID"), DataError);
  CHECK_THROWS_WITH_AS(Snapshot::from_json(bad([](json& j) { j["arrays"][0][3] = -4; })),
                       doctest::Contains("arrays[0].bytes: expected a non-negative integer, found -4"), DataError);
  CHECK_THROWS_WITH_AS(Snapshot::from_json(bad([](json& j) { j["arrays"][0][4] = "1"; })),
                       doctest::Contains("arrays[0].handles: expected a non-negative integer, found \"1\""),
                       DataError);
  CHECK_THROWS_WITH_AS(Snapshot::from_json(bad([](json& j) { j["arrays"][0][2] = 100000; })),
                       doctest::Contains("arrays[0].site: 100000 is out of range"), DataError);
  CHECK_THROWS_WITH_AS(Snapshot::from_json(bad([](json& j) { j["arrays"][0][4] = 1ull << 40; })),
                       doctest::Contains("arrays[0].handles: 1099511627776 is out of range"), DataError);
  CHECK_THROWS_WITH_AS(Snapshot::from_json(bad([](json& j) { j["sites"][0].erase("line"); })),
                       doctest::Contains("sites[0]: missing field 'line'"), DataError);
  CHECK_THROWS_WITH_AS(Snapshot::from_json(bad([](json& j) { j["managers"] = "system"; })),
                       doctest::Contains("managers: expected an array, found string"), DataError);
  CHECK_THROWS_WITH_AS(Snapshot::from_json(bad([](json& j) { j["time_ms"] = 1.5; })),
                       doctest::Contains("time_ms: expected an integer, found 1.5"), DataError);

  json dump = json::parse(debug::inspect(m, true).to_json());
  auto bad_dump = [&](auto edit) {
    json j = dump;
    edit(j);
    return j.dump();
  };
  CHECK_THROWS_WITH_AS(debug::Dump::from_json(bad_dump([](json& j) { j["root"]["device"] = "tpu(0)"; })),
                       doctest::Contains("root.device: 'tpu(0)' is not a device"), DataError);
  CHECK_THROWS_WITH_AS(debug::Dump::from_json(bad_dump([](json& j) { j["root"]["arrays"][0]["dtype"] = "f16"; })),
                       doctest::Contains("root.arrays[0].dtype: 'f16' is not a dtype"), DataError);
  CHECK_THROWS_WITH_AS(
      debug::Dump::from_json(bad_dump([](json& j) { j["root"]["arrays"][0]["shape"] = json::array({2, -1}); })),
      doctest::Contains("root.arrays[0].shape[1]: dimension -1 is negative"), DataError);
  CHECK(debug::Dump::from_json(bad_dump([](json& j) { j["root"]["device"] = "gpu(3)"; })).root.device ==
        Device::gpu(3));
  // Managers nested deeper than any program makes: refused before the reader's recursion can exhaust the stack.
  CHECK_THROWS_WITH_AS(debug::Dump::from_json(bad_dump([](json& j) {
                         json leaf = j["root"];
                         leaf["arrays"] = json::array();
                         leaf["children"] = json::array();
                         json node = leaf;
                         for (int i = 0; i < 1002; ++i) {
                           json parent = leaf;  // a copy of the leaf, not of the chain: linear, not quadratic
                           parent["children"] = json::array({std::move(node)});
                           node = std::move(parent);
                         }
                         j["root"] = std::move(node);
                       })),
                       doctest::Contains("managers nested more than 1000 levels deep"), DataError);
  CHECK_THROWS_WITH_AS(debug::OrphanReport::from_json("{\"format\": \"ndgc.orphans\", \"version\": 1}"),
                       doctest::Contains("debug::OrphanReport::from_json: the document: missing field 'arrays'"),
                       DataError);
}

TEST_CASE("16-bit arrays in dumps and snapshots: dtype names survive the JSON round trip") {
  NDManager m = NDManager::new_base_manager("json-half");
  NDArray h = m.ones({2, 3}, DataType::float16), b = m.ones({4}, DataType::bfloat16);
  const debug::Dump dump = debug::inspect(m, true);
  const debug::Dump back = debug::Dump::from_json(dump.to_json());
  CHECK(back == dump);
  CHECK(dump.to_text().find("float16") != std::string::npos);
  CHECK(dump.to_text().find("bfloat16") != std::string::npos);
  const debug::Snapshot s = debug::snapshot();
  CHECK(debug::Snapshot::from_json(s.to_json()) == s);
}
