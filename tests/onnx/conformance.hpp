// Runs ONNX's backend conformance cases (Debian's libonnx-testdata): each
// case is a folder with model.onnx and test_data_set_*/{input,output}_*.pb.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ndgc::test::onnx_conformance {

enum class Outcome { passed, refused, failed };

struct CaseResult {
  std::string directory;  // "node", "simple", ...
  std::string name;       // "test_abs"
  Outcome outcome;
  std::string reason;     // why refused or failed
  bool in_scope = true;   // in the scope ndgc aims at: see in_scope() in conformance.cpp
};

// ONNX's runner's tolerances.
constexpr double kRtol = 1e-3, kAtol = 1e-7;

CaseResult run_case(const std::filesystem::path& folder, const std::string& directory);
std::vector<CaseResult> run_directory(const std::filesystem::path& root, const std::string& directory);
// A markdown table of passed / refused / failed per directory, then the
// refused and failed cases with their reasons.
std::string report(const std::vector<CaseResult>& results);

}  // namespace ndgc::test::onnx_conformance
