// Model files: a trained model that a server can rebuild from the file alone
// (its architecture and sizes, then its parameters).
//
//   Architecture arch = Architecture::mlp(784, 10, {128, 64});
//   save_model_file(model, arch, "mlp.model");           // ndgc-train --save mlp.model
//   LoadedModel loaded = load_model_file("mlp.model", "fashion");
//   loaded.model.block().forward(...);                   // loaded.architecture.inputs == 784
//
// Format, version 1: a text header, then a parameter file (ndgc/model.hpp)
// to the end of the file, byte for byte what Model::save writes, CRC included:
//   NDGCMODEL 1
//   architecture mlp
//   inputs 784
//   outputs 10
//   hidden 128 64
//   dtype float32
//   <empty line>
// `head -7 FILE` tells what a file holds. Unknown keys are an error (a newer
// writer), so is a missing one. The architectures are those ndgc-train
// trains (--model): `mlp`, `cnn` and `lstm`, each below; a new one is a new
// `architecture` value. Every one takes flat rows of `inputs` features, so a
// server feeds them all alike; cnn and lstm read a row as a square image.
// save_model_file writes a temporary file and renames it, like Model::save.
// Errors: DataError naming the file and the problem.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ndgc/device.hpp"
#include "ndgc/dtype.hpp"
#include "ndgc/model.hpp"
#include "ndgc/nn.hpp"

namespace ndgc {

struct Architecture {
  std::string name = "mlp";
  std::int64_t inputs = 0;   // features per row
  std::int64_t outputs = 0;  // values per row
  std::vector<std::int64_t> hidden;
  DataType dtype = DataType::float32;

  // nn::Mlp with ReLU: Linear + ReLU per hidden size, then Linear to outputs.
  static Architecture mlp(std::int64_t inputs, std::int64_t outputs, std::vector<std::int64_t> hidden);
  // A row of inputs = side² pixels as a [1, side, side] image, then for
  // hidden {c1, c2, units}: conv c1 3x3 pad 1, BatchNorm, ReLU, max-pool 2 |
  // conv c2 3x3 pad 1, BatchNorm, ReLU, max-pool 2 | flatten, dropout 0.25,
  // Linear units, ReLU, Linear outputs. InvalidArgument unless inputs is a
  // square and hidden has three sizes.
  static Architecture cnn(std::int64_t inputs, std::int64_t outputs, std::vector<std::int64_t> hidden = {32, 64, 128});
  // The image's side rows as side steps of side features, LSTM(hidden[0]),
  // the last step's output into Linear outputs.
  static Architecture lstm(std::int64_t inputs, std::int64_t outputs, std::int64_t hidden_size = 128);
  // A new block with this architecture (parameters not initialized).
  std::unique_ptr<nn::Block> make_block() const;
};

struct LoadedModel {
  Architecture architecture;
  Model model;  // initialized from the file
};

void save_model_file(Model& model, const Architecture& architecture, const std::filesystem::path& file);
Architecture read_architecture(const std::filesystem::path& file);
LoadedModel load_model_file(const std::filesystem::path& file, std::string name, Device device = Device::cpu());

}  // namespace ndgc
