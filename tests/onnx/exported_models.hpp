// The models tests/onnx/export_models.py writes (PyTorch's, randomly
// initialised): NAME.onnx, NAME.input.bin (float32), NAME.output.bin
// (PyTorch's eval-mode output) and NAME.grads.json ({"shape", "grads"}:
// PyTorch's gradients of sum(output²)/2). Read by the ONNX suite and, on a
// GPU, by test_gpu.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ndgc/ndgc.hpp>

namespace ndgc::test {

inline const std::array<std::string, 9> kExportedModels = {
    "fashion_mlp",    "fashion_cnn",     "squeezenet1_1", "resnet18",   "mobilenet_v2",
    "gru_classifier", "lstm_classifier", "transformer",   "autoencoder"};

inline std::vector<float> read_floats(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<float> out(std::filesystem::file_size(file) / sizeof(float));
  in.read(reinterpret_cast<char*>(out.data()), std::streamsize(out.size() * sizeof(float)));
  return out;
}

inline nlohmann::json read_json(const std::filesystem::path& file) { return nlohmann::json::parse(std::ifstream(file)); }

// |a - b| <= atol + rtol |b| everywhere; returns how many elements are off.
inline int mismatches(const std::vector<float>& got, const std::vector<float>& want, double rtol, double atol) {
  if (got.size() != want.size()) return -1;
  int off = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool bad = std::abs(got[i] - want[i]) > atol + rtol * std::abs(want[i]);
    if (bad && off == 0) MESSAGE("element " << i << ": " << got[i] << " (expected " << want[i] << ")");
    off += bad;
  }
  return off;
}

// Gradients are compared against their tensor's scale: a ReLU input within
// rounding of 0 may be alive in one framework and dead in the other, which
// moves a gradient element that should be ~0 by a hair of the tensor's size.
inline int scaled_mismatches(const std::vector<float>& got, const std::vector<float>& want, double tolerance) {
  double scale = 0;
  for (float w : want) scale = std::max(scale, double(std::abs(w)));
  return mismatches(got, want, 0, tolerance * scale + 1e-6);
}

// NAME's input, in `m` (on its device).
inline NDArray exported_input(const std::filesystem::path& dir, const std::string& name, const ManagerRef& m) {
  const nlohmann::json meta = read_json(dir / (name + ".grads.json"));
  return m.create(read_floats(dir / (name + ".input.bin")), Shape(meta["shape"].get<std::vector<std::int64_t>>()));
}

}  // namespace ndgc::test
