// A model ndgc-serve serves, loaded from a file whose content decides the
// format: an ndgc model file (ndgc-train --save; it starts "NDGCMODEL") or,
// where ndgc::onnx is built, an ONNX graph. Either gives a Model and the
// tensors it takes and gives, with the batch axis first.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <ndgc/device.hpp>
#include <ndgc/model.hpp>
#include <ndgc/serving.hpp>

namespace ndgc::serve_tool {

class ServedModel {
 public:
  // DataError for a file that is neither; InvalidArgument for an ONNX graph
  // whose inputs or outputs have a fixed first axis or a dynamic later one.
  ServedModel(const std::filesystem::path& file, std::string name, Device device);
  ~ServedModel();
  ServedModel(const ServedModel&) = delete;
  ServedModel& operator=(const ServedModel&) = delete;

  Model& model();
  const std::vector<serving::TensorInfo>& inputs() const noexcept { return inputs_; }
  const std::vector<serving::TensorInfo>& outputs() const noexcept { return outputs_; }

 private:
  struct Held;
  std::unique_ptr<Held> held_;
  std::vector<serving::TensorInfo> inputs_, outputs_;
};

}  // namespace ndgc::serve_tool
