// ONNX graphs on a real GPU (issue 39's GPU side): what
// tests/onnx/device_test.cpp checks on the simulated GPU, with the CUDA
// engine's kernels. Each input comes from the environment, so that
// tools/gpu-session can bring it to a machine without Debian's packages:
//   NDGC_ONNX_TESTDATA    ONNX's conformance cases (default: libonnx-testdata's folder)
//   NDGC_ONNX_MODELS_DIR  tests/onnx/export_models.py's models (exported there)
// A missing one skips its case with one line.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include <ndgc/ndgc.hpp>
#include <ndgc/onnx.hpp>

#include "conformance.hpp"
#include "exported_models.hpp"
#include "forward_backward.hpp"

using namespace ndgc;

namespace {

namespace conf = test::onnx_conformance;

std::filesystem::path from_env(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}

}  // namespace

TEST_CASE("ONNX conformance on the GPU: every case that passes on the CPU passes on the GPU") {
  const std::filesystem::path root = from_env("NDGC_ONNX_TESTDATA", "/usr/share/libonnx-testdata/data");
  if (!std::filesystem::exists(root / "node")) {
    MESSAGE("skipped: no ONNX conformance cases at " << root.string() << " (NDGC_ONNX_TESTDATA)");
    return;
  }
  const int passed = conf::check_same_outcomes(root, Device::gpu(0));
  MESSAGE(passed << " conformance cases pass on the GPU, each case's outcome the CPU's");
}

TEST_CASE("PyTorch's models on the GPU: PyTorch's outputs, and the CPU's gradients for every initializer") {
  const std::filesystem::path dir = from_env("NDGC_ONNX_MODELS_DIR", "");
  if (dir.empty() || !std::filesystem::exists(dir / "resnet18.onnx")) {
    MESSAGE("skipped: NDGC_ONNX_MODELS_DIR holds no export of tests/onnx/export_models.py");
    return;
  }
  for (const std::string& name : test::kExportedModels) {
    INFO(name);
    auto input = [&](const ManagerRef& m) { return test::exported_input(dir, name, m); };
    const test::PassResult cpu = test::forward_backward(dir / (name + ".onnx"), Device::cpu(), input);
    const test::PassResult gpu = test::forward_backward(dir / (name + ".onnx"), Device::gpu(0), input);
    CHECK(test::mismatches(gpu.output, test::read_floats(dir / (name + ".output.bin")), 1e-3, 1e-4) == 0);
    REQUIRE(gpu.gradients.size() == cpu.gradients.size());
    for (const auto& entry : cpu.gradients) {  // INFO captures the name: no structured binding (clang 14)
      const std::string& pname = entry.first;
      INFO(pname);
      CHECK(test::scaled_mismatches(gpu.gradients.at(pname), entry.second, 1e-3) == 0);
    }
  }
  gc::poll();
  CHECK(memory::stats(Device::gpu(0)).current_bytes == 0);
}
