// Runs ONNX's backend conformance cases (Debian's libonnx-testdata): each
// case is a folder with model.onnx and test_data_set_*/{input,output}_*.pb.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <ndgc/device.hpp>

namespace ndgc::test::onnx_conformance {

// bad_data: the case's own data contradicts its graph (an input of another
// shape than the graph declares), or ONNX has since corrected its expected
// values (listed, with the evidence, in conformance.cpp); neither ndgc's pass
// nor its failure.
enum class Outcome { passed, refused, failed, bad_data };

struct CaseResult {
  std::string directory;  // "node", "simple", ...
  std::string name;       // "test_abs"
  Outcome outcome;
  std::string reason;     // why refused or failed
  bool in_scope = true;   // in the scope ndgc aims at: see in_scope() in conformance.cpp
};

// ONNX's runner's tolerances; a 16-bit result may also be one unit in its
// last place off (kRtolBfloat16, kRtolFloat16), as ONNX 1.12 made its
// bfloat16 Cast data by truncating where the spec rounds to nearest even.
constexpr double kRtol = 1e-3, kAtol = 1e-7, kRtolBfloat16 = 0x1p-7, kRtolFloat16 = 0x1p-10;

// Each case is loaded onto `device`; its inputs go there and its outputs are
// read back from there.
CaseResult run_case(const std::filesystem::path& folder, const std::string& directory, Device device = Device::cpu());
std::vector<CaseResult> run_directory(const std::filesystem::path& root, const std::string& directory,
                                      Device device = Device::cpu());
// Runs every case of the four directories on the CPU and on `device` and
// checks (doctest) that each has the same outcome on both; returns how many
// pass on `device`.
int check_same_outcomes(const std::filesystem::path& root, Device device);
// A markdown table of passed / refused / failed / bad data per directory, then the
// refused and failed cases with their reasons.
std::string report(const std::vector<CaseResult>& results);

}  // namespace ndgc::test::onnx_conformance
