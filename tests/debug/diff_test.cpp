// debug::diff(): on a scripted leak, the diff names the leaking file and line
// with the right counts and bytes, largest first.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "debug_test_util.hpp"
#include "test_util.hpp"

using namespace ndgc;
using test::ends_with;
using test::site_text;

namespace {

// A training-like step: a per-step manager whose arrays are freed, plus two
// leaks into the long-lived `model` (an op whose first input is a model
// array, as DJL's users write by accident). Returns the leaking lines.
struct LeakLines {
  int big = 0, small = 0;
};

LeakLines step(NDManager& model, const NDArray& w, std::vector<NDArray>& kept) {
  LeakLines lines;
  NDManager batch = model.new_sub_manager("batch");
  NDArray x = batch.ones({8, 16});
  NDArray big = w.mul(2.0); lines.big = __LINE__;                  // 16x16 float32: 1024 B, joins model
  NDArray small = model.zeros({4}, DataType::int32); lines.small = __LINE__;  // 16 B
  kept.push_back(small);                                           // held: not an orphan
  (void)x.sum();
  return lines;
}

}  // namespace

TEST_CASE("diff names the leaking line with the right counts and bytes, largest first") {
  NDManager model = NDManager::new_base_manager("diff-model");
  NDArray w = model.random_normal({16, 16});
  std::vector<NDArray> kept;
  LeakLines lines = step(model, w, kept);  // warm-up step, as epoch 1

  constexpr int kSteps = 25;
  debug::Snapshot before = debug::snapshot();
  for (int i = 0; i < kSteps; ++i) step(model, w, kept);
  debug::Snapshot after = debug::snapshot();
  debug::Diff d = debug::diff(before, after);

  REQUIRE(d.groups.size() == 2);  // the batch managers' arrays came and went
  const debug::DiffGroup& top = d.groups[0];
  CHECK(top.manager == "system/diff-model");
  CHECK(ends_with(top.site.file, "diff_test.cpp"));
  CHECK(top.site.line == std::uint32_t(lines.big));
  CHECK(top.array_growth() == kSteps);
  CHECK(top.byte_growth() == kSteps * 1024);
  CHECK(top.arrays_after - top.arrays_before == std::uint64_t(kSteps));
  const debug::DiffGroup& second = d.groups[1];
  CHECK(second.site.line == std::uint32_t(lines.small));
  CHECK(second.array_growth() == kSteps);
  CHECK(second.byte_growth() == kSteps * 16);
  CHECK(d.array_growth() == 2 * kSteps);
  CHECK(d.byte_growth() == kSteps * (1024 + 16));
  CHECK(d.before.arrays == before.arrays.size());
  CHECK(d.after.bytes == after.bytes());

  std::string text = d.to_text();
  CHECK(text.rfind("diff: +50 arrays, +25.4 KiB (+26000 B); before ", 0) == 0);
  std::vector<std::string> words = test::words_of_line(text, site_text(__FILE__, lines.big));
  REQUIRE(words.size() == 5);
  CHECK(words[0] == "+25");
  CHECK(words[1] + " " + words[2] == "+25.0 KiB");
  CHECK(words[3] == "system/diff-model");
  CHECK(ends_with(words[4], site_text(__FILE__, lines.big)));
  CHECK(text.find(site_text(__FILE__, lines.big)) < text.find(site_text(__FILE__, lines.small)));
  CHECK(d.to_text(1).find("... 1 more groups") != std::string::npos);
}

TEST_CASE("diff of a snapshot with itself is empty; shrinking groups come last") {
  NDManager m = NDManager::new_base_manager("diff-shrink");
  std::vector<NDArray> a, b;
  for (int i = 0; i < 5; ++i) a.push_back(m.zeros({10}));
  debug::Snapshot s1 = debug::snapshot();
  debug::Diff same = debug::diff(s1, s1);
  CHECK(same.groups.empty());
  CHECK(same.to_text().find("(no change)") != std::string::npos);

  for (NDArray& x : a) x.close();
  for (int i = 0; i < 2; ++i) b.push_back(m.zeros({1}));
  debug::Snapshot s2 = debug::snapshot();
  debug::Diff d = debug::diff(s1, s2);
  REQUIRE(d.groups.size() == 2);
  CHECK(d.groups[0].array_growth() == 2);
  CHECK(d.groups[0].byte_growth() == 8);
  CHECK(d.groups[1].array_growth() == -5);
  CHECK(d.groups[1].byte_growth() == -200);
  CHECK(d.groups[1].arrays_after == 0);
  debug::Diff grew = d.growing();
  REQUIRE(grew.groups.size() == 1);
  CHECK(grew.groups[0] == d.groups[0]);
  CHECK(grew.before == d.before);
  CHECK(grew.after == d.after);
  std::vector<std::string> words = test::words_of_line(d.to_text(), "-200 B");
  REQUIRE(words.size() == 5);
  CHECK(words[0] == "-5");
  CHECK(words[3] == "system/diff-shrink");
}

TEST_CASE("diff groups by manager path: the same site in two managers is two groups") {
  NDManager a = NDManager::new_base_manager("diff-a");
  NDManager b = NDManager::new_base_manager("diff-b");
  std::vector<NDArray> keep;
  debug::Snapshot s1 = debug::snapshot();
  for (int i = 0; i < 3; ++i)
    for (ManagerRef m : {ManagerRef(a), ManagerRef(b)}) keep.push_back(m.zeros({i == 0 ? 1 : 2}));
  debug::Diff d = debug::diff(s1, debug::snapshot());
  REQUIRE(d.groups.size() == 2);
  CHECK(d.groups[0].site == d.groups[1].site);
  CHECK(d.groups[0].manager == "system/diff-a");  // equal growth: ordered by path
  CHECK(d.groups[1].manager == "system/diff-b");
  CHECK(d.groups[0].array_growth() == 3);
  CHECK(d.groups[0].byte_growth() == 20);
}
