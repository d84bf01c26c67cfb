// The leak report (src/trace/leak_report.cpp): leaked handles by creation site.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "trace_util.hpp"

using namespace ndgc;
using test::TraceOn;

namespace {

constexpr std::uint32_t kLineA = __LINE__ + 1;
[[gnu::noinline]] void leak_a(const ManagerRef& m) { (void)new NDArray(m.zeros({100})); }
constexpr std::uint32_t kLineB = __LINE__ + 1;
[[gnu::noinline]] void leak_b(const ManagerRef& m) { (void)new NDArray(m.zeros({10})); }

}  // namespace

TEST_CASE("leaked handles are grouped by creation site, largest first") {
  test::run_clean([] {
    TraceOn on;
    trace::reset_leak_report();
    NDManager m = NDManager::new_base_manager("report");
    for (int i = 0; i < 3; ++i) leak_a(m);
    for (int i = 0; i < 4; ++i) leak_b(m);
    REQUIRE(test::collect_until([&] { return m.array_count() == 0; }));
    auto report = trace::leak_report();
    REQUIRE(report.size() == 2);
    CHECK(report[0].line == kLineA);
    CHECK(report[0].arrays == 3);
    CHECK(report[0].bytes == 3 * 100 * 4);
    CHECK(report[1].line == kLineB);
    CHECK(report[1].arrays == 4);
    CHECK(report[0].file.find("leak_report_test.cpp") != std::string::npos);
    std::string text = trace::leak_report_text();
    CHECK(text.find("leak_report_test.cpp:" + std::to_string(kLineA)) != std::string::npos);
    // The same report through the debug API, with the manager that held them.
    debug::LeakedHandles leaked = debug::leaked_handles();
    CHECK(leaked.arrays == 7);
    REQUIRE(leaked.groups.size() == 2);
    CHECK(leaked.groups[0].site.line == kLineA);
    CHECK(leaked.groups[0].managers == std::vector<std::string>{"system/report"});
    CHECK(leaked.to_text().find("leak_report_test.cpp:" + std::to_string(kLineB)) != std::string::npos);
    trace::reset_leak_report();
    CHECK(trace::leak_report().empty());
    CHECK(debug::leaked_handles().arrays == 0);
    CHECK(trace::leak_report_text() == "no leaked handles found\n");
  });
}
