// debug::snapshot(): every live array with its manager path, site, bytes,
// handle count and UUID; cheap enough to take once per epoch.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "debug_test_util.hpp"
#include "test_util.hpp"

using namespace ndgc;
using test::count_at;
using test::ends_with;

namespace {

const debug::ArrayRecord* find(const debug::Snapshot& s, const Uuid& id) {
  for (const debug::ArrayRecord& a : s.arrays)
    if (a.uuid == id) return &a;
  return nullptr;
}

}  // namespace

TEST_CASE("a snapshot records each live array: UUID, manager path, site, bytes, handles") {
  NDManager model = NDManager::new_base_manager("snap-model");
  NDManager step = model.new_sub_manager("step");
  NDArray w = model.zeros({10, 10}); int w_line = __LINE__;
  NDArray x = step.ones({3}, DataType::float64); int x_line = __LINE__;
  NDArray x2 = x;  // two handles
  NDArray v = w.reshape({100}); int v_line = __LINE__;  // a view: charged 0 bytes
  Uuid orphan_id;
  { NDArray o = model.zeros({7}); orphan_id = o.uid(); }

  debug::Snapshot s = debug::snapshot();
  CHECK(s.time_ms > 0);

  const debug::ArrayRecord* rw = find(s, w.uid());
  REQUIRE(rw);
  CHECK(s.manager_of(*rw) == "system/snap-model");
  CHECK(ends_with(s.site_of(*rw).file, "snapshot_test.cpp"));
  CHECK(s.site_of(*rw).line == std::uint32_t(w_line));
  CHECK(s.site_of(*rw).function.find("DOCTEST") != std::string::npos);  // the test case's function
  CHECK(rw->bytes == 400);
  CHECK(rw->handles == 1);

  const debug::ArrayRecord* rx = find(s, x.uid());
  REQUIRE(rx);
  CHECK(s.manager_of(*rx) == "system/snap-model/step");
  CHECK(s.site_of(*rx).line == std::uint32_t(x_line));
  CHECK(rx->bytes == 24);
  CHECK(rx->handles == 2);

  const debug::ArrayRecord* rv = find(s, v.uid());
  REQUIRE(rv);
  CHECK(s.site_of(*rv).line == std::uint32_t(v_line));
  CHECK(rv->bytes == 0);

  const debug::ArrayRecord* ro = find(s, orphan_id);
  REQUIRE(ro);
  CHECK(ro->handles == 0);
  CHECK(s.orphan_count() >= 1);
}

TEST_CASE("a snapshot interns paths and sites, and lists each array once") {
  NDManager m = NDManager::new_base_manager("snap-intern");
  std::vector<NDArray> keep;
  int line = 0;
  for (int i = 0; i < 50; ++i) {
    keep.push_back(m.zeros({2})); line = __LINE__;
  }
  // Three managers with one name: one path, holding all three arrays.
  std::vector<NDManager> steps;
  for (int i = 0; i < 3; ++i) {
    steps.push_back(m.new_sub_manager("step"));
    keep.push_back(steps.back().ones({1}));
  }
  debug::Snapshot s = debug::snapshot();
  CHECK(count_at(s, "snapshot_test.cpp", line) == 50);
  CHECK(std::count(s.managers.begin(), s.managers.end(), "system/snap-intern/step") == 1);
  CHECK(std::count_if(s.arrays.begin(), s.arrays.end(), [&](const debug::ArrayRecord& a) {
          return s.manager_of(a) == "system/snap-intern/step";
        }) == 3);
  std::set<std::string> paths(s.managers.begin(), s.managers.end());
  CHECK(paths.size() == s.managers.size());
  std::set<std::pair<std::string, std::uint32_t>> sites;
  for (const debug::SiteInfo& site : s.sites) sites.insert({site.file, site.line});
  CHECK(sites.size() == s.sites.size());
  CHECK(test::uuids_of(s).size() == s.arrays.size());
  for (const debug::ArrayRecord& a : s.arrays) {
    CHECK(a.manager < s.managers.size());
    CHECK(a.site < s.sites.size());
  }
}

TEST_CASE("closed arrays and closed managers leave the snapshot") {
  NDManager m = NDManager::new_base_manager("snap-closing");
  NDArray a = m.ones({4}), b = m.ones({4});
  Uuid ida = a.uid(), idb = b.uid();
  a.close();
  debug::Snapshot s1 = debug::snapshot();
  CHECK_FALSE(find(s1, ida));
  CHECK(find(s1, idb));
  m.close();
  debug::Snapshot s2 = debug::snapshot();
  CHECK_FALSE(find(s2, idb));
  for (const std::string& p : s2.managers) CHECK(p != "system/snap-closing");
}

TEST_CASE("snapshot bytes agree with the managers' accounting") {
  NDManager m = NDManager::new_base_manager("snap-bytes");
  NDArray a = m.zeros({1000}), b = m.zeros({10}, DataType::int64);
  NDArray view = a.reshape({10, 100});
  debug::Snapshot s = debug::snapshot();
  std::uint64_t in_m = 0;
  std::size_t arrays_in_m = 0;
  for (const debug::ArrayRecord& r : s.arrays)
    if (s.manager_of(r) == "system/snap-bytes") {
      in_m += r.bytes;
      ++arrays_in_m;
    }
  CHECK(in_m == 4080);
  CHECK(arrays_in_m == m.array_count());
  CHECK(debug::inspect(m).root.bytes == in_m);
}

TEST_CASE("a snapshot drains the auto-close queue first, like every entry point") {
  test::AutoClose on(true);
  NDManager m = NDManager::new_base_manager("snap-drain");
  Uuid id;
  { NDArray t = m.zeros({8}); id = t.uid(); }  // queued, not yet closed
  debug::Snapshot s = debug::snapshot();
  CHECK_FALSE(find(s, id));
}

TEST_CASE("snapshot of 100k arrays: every array, a diff and a JSON round trip") {
  // How long this takes is a benchmark (perf/data_debug_bench.cpp,
  // BM_Snapshot and BM_Diff), not a test: a busy machine must not fail CI.
  NDManager m = NDManager::new_base_manager("snap-100k");
  constexpr int kArrays = 100000;
  std::vector<NDArray> keep;
  keep.reserve(kArrays);
  for (int i = 0; i < kArrays; ++i) keep.push_back(m.zeros({1}));
  debug::Snapshot a = debug::snapshot();
  CHECK(a.arrays.size() >= std::size_t(kArrays));
  std::set<Uuid> ids = test::uuids_of(a);
  std::size_t found = 0;
  for (const NDArray& k : keep) found += ids.count(k.uid());
  CHECK(found == std::size_t(kArrays));
  for (int i = 0; i < 1000; ++i) keep.push_back(m.zeros({1}));
  debug::Snapshot b = debug::snapshot();
  debug::Diff d = debug::diff(a, b);
  REQUIRE_FALSE(d.groups.empty());
  CHECK(d.groups[0].array_growth() == 1000);
  CHECK(debug::Snapshot::from_json(b.to_json()) == b);
}
