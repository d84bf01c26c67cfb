// The model a run trains: one of ndgc-train's architectures (--model mlp, cnn,
// lstm), or a graph from an ONNX file (--model FILE.onnx) when ndgc::onnx is
// built. Both give a Model whose block takes Fashion-MNIST batches.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <ndgc/data.hpp>
#include <ndgc/device.hpp>
#include <ndgc/model.hpp>

namespace ndgc::train_tool {

class TrainedModel {
 public:
  // InvalidArgument for an ONNX graph that does not take [N, 1, 28, 28] or
  // [N, 784] float32 and give [N, 10], or when ONNX support is not built.
  TrainedModel(const std::string& choice, Device device, std::int64_t batch_size);
  ~TrainedModel();
  TrainedModel(const TrainedModel&) = delete;
  TrainedModel& operator=(const TrainedModel&) = delete;

  Model& model();
  // The dataset with its features shaped as the model takes them (a view).
  data::ArrayDataset shaped(const data::ArrayDataset& dataset) const;
  // A model file (ndgc/model_file.hpp), or with an ONNX graph the graph with its trained values.
  void save(const std::filesystem::path& file);

  // True when `choice` names an ONNX file rather than an architecture.
  static bool is_onnx(const std::string& choice);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ndgc::train_tool
