// See trained_model.hpp.
#include "trained_model.hpp"

#include <optional>

#include <fmt/format.h>

#include <ndgc/error.hpp>
#include <ndgc/model_file.hpp>
#if NDGC_TRAIN_ONNX
#include <ndgc/onnx.hpp>
#endif

namespace ndgc::train_tool {
namespace {

Architecture architecture_of(const std::string& choice) {
  if (choice == "cnn") return Architecture::cnn(784, 10);
  if (choice == "lstm") return Architecture::lstm(784, 10);
  return Architecture::mlp(784, 10, {128, 64});
}

#if NDGC_TRAIN_ONNX
// The graph's input shape for a batch, or InvalidArgument naming what does not fit.
Shape image_shape(const onnx::Imported& g, const std::string& file, std::int64_t batch) {
  auto fits = [](const std::vector<std::int64_t>& have, const std::vector<std::int64_t>& want) {
    if (have.size() != want.size()) return false;
    for (std::size_t k = 1; k < have.size(); ++k)
      if (have[k] != want[k]) return false;
    return true;
  };
  const bool one_each = g.inputs.size() == 1 && g.outputs.size() == 1;
  if (one_each && g.inputs[0].dtype == DataType::float32 && fits(g.outputs[0].shape, {-1, 10})) {
    if (fits(g.inputs[0].shape, {-1, 1, 28, 28})) return Shape{batch, 1, 28, 28};
    if (fits(g.inputs[0].shape, {-1, 784})) return Shape{batch, 784};
  }
  throw InvalidArgument(fmt::format(
      "ndgc-train --model {}: the graph must take one float32 input [N, 1, 28, 28] or [N, 784] and give one output "
      "[N, 10] (logits); it takes {} input(s) and gives {} output(s)",
      file, g.inputs.size(), g.outputs.size()));
}
#endif

}  // namespace

struct TrainedModel::Impl {
  std::optional<Architecture> architecture;
  std::optional<Model> native;
#if NDGC_TRAIN_ONNX
  std::optional<onnx::Imported> imported;
#endif
  Shape input;
};

bool TrainedModel::is_onnx(const std::string& choice) { return choice != "mlp" && choice != "cnn" && choice != "lstm"; }

TrainedModel::TrainedModel(const std::string& choice, Device device, std::int64_t batch_size)
    : impl_(std::make_unique<Impl>()) {
  if (!is_onnx(choice)) {
    impl_->architecture = architecture_of(choice);
    impl_->native.emplace(choice, impl_->architecture->make_block(), device);
    impl_->input = Shape{batch_size, 784};
    impl_->native->initialize(impl_->input);
    return;
  }
#if NDGC_TRAIN_ONNX
  const std::filesystem::path file(choice);
  impl_->imported.emplace(onnx::load(file, file.stem().string(), device));
  impl_->input = image_shape(*impl_->imported, choice, batch_size);
#else
  throw InvalidArgument(fmt::format("ndgc-train --model {}: this build has no ONNX support (libonnx-dev was not found)",
                                    choice));
#endif
}

TrainedModel::~TrainedModel() = default;

Model& TrainedModel::model() {
#if NDGC_TRAIN_ONNX
  if (impl_->imported) return impl_->imported->model;
#endif
  return *impl_->native;
}

data::ArrayDataset TrainedModel::shaped(const data::ArrayDataset& dataset) const {
  Shape rows = impl_->input;
  rows[0] = -1;
  return data::ArrayDataset(dataset.features().reshape(rows), dataset.labels());
}

void TrainedModel::save(const std::filesystem::path& file) {
#if NDGC_TRAIN_ONNX
  if (impl_->imported) {
    onnx::save(*impl_->imported, file);
    return;
  }
#endif
  save_model_file(*impl_->native, *impl_->architecture, file);
}

}  // namespace ndgc::train_tool
