// debug::leaked_handles(): the arrays the trace detector closed, by site.
// The detector itself is tested in tests/trace (its own binary); here the
// report is fed the way the detector's drain feeds it (a pinned array), so
// grouping, managers, the UUID cap, text, JSON and reset are checked without
// Boehm GC.
#include <doctest/doctest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "core/registry.hpp"
#include "debug/leaked_handles.hpp"
#include "debug_test_util.hpp"

using namespace ndgc;
using test::ends_with;

namespace {

void record(const NDArray& a) {
  ndgc::detail::Pinned pinned(a, "test");
  debug::detail::record_leaked_handle(*pinned);
}

}  // namespace

TEST_CASE("leaked handles are grouped by site with their managers, largest first") {
  debug::reset_leaked_handles();
  CHECK(debug::leaked_handles() == debug::LeakedHandles{});
  NDManager model = NDManager::new_base_manager("leak-model");
  NDManager step = model.new_sub_manager("step");
  std::vector<NDArray> small, big;
  const int small_line = __LINE__ + 1;
  for (int i = 0; i < 100; ++i) small.push_back(i % 2 ? model.zeros({2}) : step.zeros({2}));
  const int big_line = __LINE__ + 1;
  for (int i = 0; i < 3; ++i) big.push_back(model.zeros({1000}));
  for (const NDArray& a : small) record(a);
  for (const NDArray& a : big) record(a);

  debug::LeakedHandles r = debug::leaked_handles();
  CHECK(r.arrays == 103);
  CHECK(r.bytes == 100 * 8 + 3 * 4000);
  REQUIRE(r.groups.size() == 2);
  CHECK(r.groups[0].site.line == std::uint32_t(big_line));  // most bytes first
  CHECK(r.groups[0].arrays == 3);
  CHECK(r.groups[0].managers == std::vector<std::string>{"system/leak-model"});
  CHECK(r.groups[1].site.line == std::uint32_t(small_line));
  CHECK(ends_with(r.groups[1].site.file, "leaked_handles_test.cpp"));
  CHECK(r.groups[1].arrays == 100);
  CHECK(r.groups[1].bytes == 800);
  CHECK(r.groups[1].managers == std::vector<std::string>{"system/leak-model", "system/leak-model/step"});
  CHECK(r.groups[1].uuids.size() == debug::kLeakedUuidsPerSite);  // capped; the counts are not
  CHECK(std::is_sorted(r.groups[1].uuids.begin(), r.groups[1].uuids.end()));
  CHECK(r.groups[0].uuids.size() == 3);

  const std::string text = r.to_text();
  CHECK(text.find("leaked handles: 103 arrays") == 0);
  CHECK(text.find("closed by the trace detector") != std::string::npos);
  CHECK(text.find(test::site_text(__FILE__, big_line)) < text.find(test::site_text(__FILE__, small_line)));
  CHECK(r.to_text(1).find("... 1 more groups") != std::string::npos);

  CHECK(debug::LeakedHandles::from_json(r.to_json()) == r);
  CHECK(debug::LeakedHandles::from_json(r.to_json(2)) == r);

  debug::reset_leaked_handles();
  CHECK(debug::leaked_handles().arrays == 0);
  CHECK(debug::leaked_handles().to_text() == "leaked handles: 0 arrays, 0 B (0 B) closed by the trace detector\n  (none)\n");
}

TEST_CASE("leaked-handles JSON: errors name the format and what is wrong") {
  CHECK_THROWS_AS(debug::LeakedHandles::from_json("{"), DataError);
  // An orphan report is not a leaked-handles report, though the groups look alike.
  const std::string orphans = debug::OrphanReport{}.to_json();
  CHECK_THROWS_WITH_AS(debug::LeakedHandles::from_json(orphans), doctest::Contains("ndgc.leaked_handles"), DataError);
}

TEST_CASE("recording leaked handles from several threads") {
  debug::reset_leaked_handles();
  NDManager m = NDManager::new_base_manager("leak-threads");
  constexpr int kThreads = 4, kEach = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) record(m.zeros({1}));
    });
  for (std::thread& t : threads) t.join();
  debug::LeakedHandles r = debug::leaked_handles();
  CHECK(r.arrays == kThreads * kEach);
  REQUIRE(r.groups.size() == 1);
  CHECK(r.groups[0].bytes == kThreads * kEach * 4);
  debug::reset_leaked_handles();
}
