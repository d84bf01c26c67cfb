// See served_model.hpp.
#include "served_model.hpp"

#include <fstream>
#include <optional>

#include <fmt/format.h>

#include <ndgc/error.hpp>
#include <ndgc/model_file.hpp>
#if NDGC_SERVE_ONNX
#include <ndgc/onnx.hpp>
#endif

namespace ndgc::serve_tool {
namespace {

bool is_model_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw DataError(fmt::format("cannot open model file {}", file.string()));
  char head[9] = {};
  in.read(head, sizeof head);
  return std::string(head, std::size_t(in.gcount())) == "NDGCMODEL";
}

#if NDGC_SERVE_ONNX
// A graph value as a served tensor: the batch axis first and dynamic, the rest fixed.
serving::TensorInfo served_tensor(const onnx::ValueInfo& v, const std::filesystem::path& file, const char* what) {
  const bool batched = !v.shape.empty() && v.shape[0] < 0;
  bool fixed = true;
  for (std::size_t k = 1; k < v.shape.size(); ++k) fixed = fixed && v.shape[k] >= 0;
  if (!batched || !fixed)
    throw InvalidArgument(fmt::format(
        "{}: {} '{}' has shape [{}]; a served graph needs a dynamic first (batch) axis and fixed others",
        file.string(), what, v.name, fmt::join(v.shape, ", ")));
  return {v.name, v.dtype, std::vector<std::int64_t>(v.shape.begin() + 1, v.shape.end())};
}
#endif

}  // namespace

struct ServedModel::Held {
  std::optional<LoadedModel> native;
#if NDGC_SERVE_ONNX
  std::optional<onnx::Imported> imported;
#endif
};

ServedModel::ServedModel(const std::filesystem::path& file, std::string name, Device device)
    : held_(std::make_unique<Held>()) {
  if (is_model_file(file)) {
    held_->native.emplace(load_model_file(file, std::move(name), device));
    const Architecture& a = held_->native->architecture;
    inputs_ = {{"input", DataType::float32, {a.inputs}}};
    outputs_ = {{"output", DataType::float32, {a.outputs}}};
    return;
  }
#if NDGC_SERVE_ONNX
  held_->imported.emplace(onnx::load(file, std::move(name), device, {.trainable = false}));
  for (const auto& v : held_->imported->inputs) inputs_.push_back(served_tensor(v, file, "input"));
  for (const auto& v : held_->imported->outputs) outputs_.push_back(served_tensor(v, file, "output"));
#else
  throw DataError(fmt::format("{} is not an ndgc model file (it does not start with NDGCMODEL), and this "
                              "build has no ONNX support",
                              file.string()));
#endif
}

ServedModel::~ServedModel() = default;

Model& ServedModel::model() {
#if NDGC_SERVE_ONNX
  if (held_->imported) return held_->imported->model;
#endif
  return held_->native->model;
}

}  // namespace ndgc::serve_tool
