// debug::orphans(): the arrays no handle reaches, by site — exactly what
// gc::sweep() (or auto-close) then closes.
#include <doctest/doctest.h>

#include <set>
#include <vector>

#include "debug_test_util.hpp"
#include "test_util.hpp"

using namespace ndgc;
using test::ends_with;

namespace {

std::set<Uuid> orphan_uuids(const debug::OrphanReport& r) {
  std::set<Uuid> out;
  for (const debug::OrphanGroup& g : r.groups) out.insert(g.uuids.begin(), g.uuids.end());
  return out;
}

}  // namespace

TEST_CASE("orphans() finds exactly the arrays gc::sweep() then closes") {
  test::AutoClose off(false);
  gc::sweep();  // start from no orphans, whatever earlier tests left
  NDManager model = NDManager::new_base_manager("orphan-model");
  NDManager other = NDManager::new_base_manager("orphan-other");
  std::vector<NDArray> kept;
  std::set<Uuid> dropped;
  int big_line = 0, small_line = 0;
  for (int i = 0; i < 20; ++i) {
    NDArray t = model.zeros({64}); big_line = __LINE__;  // 256 B, dropped
    dropped.insert(t.uid());
    NDArray u = other.ones({2}); small_line = __LINE__;  // 8 B
    if (i % 2) kept.push_back(u);
    else dropped.insert(u.uid());
    kept.push_back(model.zeros({1}));
  }
  NDArray base = model.zeros({4, 4});
  NDArray view = base.reshape({16});
  { NDArray lost_view = base.reshape({2, 8}); dropped.insert(lost_view.uid()); }  // an orphan view: 0 bytes

  debug::OrphanReport report = debug::orphans();
  CHECK(report.arrays == dropped.size());
  CHECK(orphan_uuids(report) == dropped);
  CHECK(report.bytes == 20 * 256 + 10 * 8);
  REQUIRE(report.groups.size() == 3);
  CHECK(ends_with(report.groups[0].site.file, "orphans_test.cpp"));
  CHECK(report.groups[0].site.line == std::uint32_t(big_line));  // most bytes first
  CHECK(report.groups[0].arrays == 20);
  CHECK(report.groups[0].bytes == 20 * 256);
  CHECK(report.groups[0].managers == std::vector<std::string>{"system/orphan-model"});
  CHECK(report.groups[1].site.line == std::uint32_t(small_line));
  CHECK(report.groups[1].arrays == 10);
  CHECK(report.groups[1].managers == std::vector<std::string>{"system/orphan-other"});
  CHECK(report.groups[2].bytes == 0);

  // orphans() changed nothing: the arrays are still open.
  CHECK(model.array_count() == 20 + 20 + 1 + 1 + 1);

  debug::Snapshot before = debug::snapshot();
  gc::Stats s0 = gc::stats();
  std::uint64_t swept = gc::sweep();
  gc::Stats s1 = gc::stats();
  CHECK(swept == report.arrays);
  CHECK(s1.reclaimed_bytes - s0.reclaimed_bytes == report.bytes);  // the view's buffer lives on in `base`
  // The UUIDs that left are exactly the orphans, and nothing else left.
  std::set<Uuid> after = test::uuids_of(debug::snapshot());
  std::set<Uuid> gone;
  for (const Uuid& id : test::uuids_of(before))
    if (!after.count(id)) gone.insert(id);
  CHECK(gone == dropped);
  CHECK(debug::orphans().arrays == 0);
  for (const NDArray& k : kept) CHECK_FALSE(k.is_closed());
}

TEST_CASE("orphans() reports what auto-close would free; switching it on frees the same") {
  test::AutoClose off(false);
  gc::sweep();
  NDManager m = NDManager::new_base_manager("orphan-autoclose");
  std::vector<NDArray> held;
  for (int i = 0; i < 10; ++i) held.push_back(m.zeros({3}));

  // The same program, once with auto-close off (counting orphans), once on.
  auto run = [&](std::vector<NDArray>& out) {
    for (int i = 0; i < 10; ++i) {
      NDArray t = m.ones({5});
      if (i < 3) out.push_back(t);
    }
  };
  std::vector<NDArray> off_kept;
  run(off_kept);
  debug::OrphanReport would = debug::orphans();
  CHECK(would.arrays == 7);
  CHECK(would.bytes == 7 * 20);
  gc::sweep();

  std::uint64_t reclaimed = gc::stats().reclaimed;
  {
    test::AutoClose on(true);
    std::vector<NDArray> on_kept;
    run(on_kept);
    gc::poll();
    CHECK(gc::stats().reclaimed - reclaimed == would.arrays);
    CHECK(debug::orphans().arrays == 0);
  }
  CHECK(m.array_count() == 10 + 3);  // held and off_kept; auto-close closed on_kept's when it died
}

TEST_CASE("orphans(snapshot) works on a saved snapshot, and text lists each site") {
  test::AutoClose off(false);
  gc::sweep();
  NDManager m = NDManager::new_base_manager("orphan-text");
  int line = 0;
  for (int i = 0; i < 4; ++i) {
    NDArray t = m.zeros({256}); line = __LINE__;
  }
  debug::Snapshot s = debug::Snapshot::from_json(debug::snapshot().to_json());
  debug::OrphanReport r = debug::orphans(s);
  CHECK(r == debug::orphans());
  std::string text = r.to_text();
  CHECK(text.rfind("orphans: 4 arrays, 4.0 KiB (4096 B) that no handle reaches\n", 0) == 0);
  std::vector<std::string> words = test::words_of_line(text, test::site_text(__FILE__, line));
  REQUIRE(words.size() == 6);
  CHECK(words[0] == "4");
  CHECK(words[1] + " " + words[2] == "4.0 KiB");
  CHECK(words[4] == "in");
  CHECK(words[5] == "system/orphan-text");
  gc::sweep();
  CHECK(debug::orphans().to_text() == "orphans: 0 arrays, 0 B (0 B) that no handle reaches\n  (none)\n");
}
