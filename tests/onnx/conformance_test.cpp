// ONNX's own backend conformance suite (Debian's libonnx-testdata): every case
// either passes within ONNX's tolerances or is refused at load. None may give
// a wrong answer or fail at forward. NDGC_ONNX_REPORT=FILE writes the table.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>

#include "conformance.hpp"

namespace ndgc::test::onnx_conformance {
namespace {

const std::filesystem::path kRoot = NDGC_ONNX_TESTDATA;

std::vector<CaseResult> run_and_check(const std::string& directory) {
  std::vector<CaseResult> results = run_directory(kRoot, directory);
  int passed = 0;
  for (const auto& r : results) {
    passed += r.outcome == Outcome::passed;
    if (r.outcome == Outcome::failed) FAIL_CHECK(directory << "/" << r.name << ": " << r.reason);
  }
  MESSAGE(directory << ": " << passed << " of " << results.size() << " cases pass");
  return results;
}

}  // namespace

TEST_CASE("ONNX conformance: every case passes or is refused at load") {
  if (!std::filesystem::exists(kRoot)) {
    MESSAGE("skipped: " << kRoot.string() << " is missing (tools/bootstrap installs libonnx-testdata)");
    return;
  }
  std::vector<CaseResult> all;
  for (const char* directory : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    std::vector<CaseResult> some = run_and_check(directory);
    all.insert(all.end(), some.begin(), some.end());
  }
  if (const char* file = std::getenv("NDGC_ONNX_REPORT")) std::ofstream(file) << report(all);
}

}  // namespace ndgc::test::onnx_conformance
