// Model: owns the model manager and the block. File I/O is in model_file.cpp.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/model.hpp"

namespace ndgc {

Model::Model(std::string name, std::unique_ptr<nn::Block> block, Device device)
    : name_(std::move(name)), manager_(NDManager::new_base_manager("model " + name_, device)), block_(std::move(block)) {
  if (!block_) throw InvalidArgument(fmt::format("Model '{}': the block is null", name_));
}

Model::~Model() {
  block_.reset();  // drop the parameters' handles, then close the manager
}

Shape Model::initialize(const Shape& input_shape, DataType dtype) {
  return block_->initialize(manager_, input_shape, dtype);
}

void Model::cast(DataType dtype) {
  if (!is_floating(dtype))
    throw InvalidArgument(fmt::format("Model '{}': cast to {}: only a floating dtype (float32, float64, float16, "
                                      "bfloat16) holds parameters' values",
                                      name_, to_string(dtype)));
  for (const nn::NamedParameter& p : parameters()) {
    NDArray old = p.parameter->array();
    if (!is_floating(old.dtype()) || old.dtype() == dtype) continue;
    p.parameter->set_array(old.to_type(dtype));  // in the model's manager, beside the old one
    if (old.requires_gradient()) old.gradient().close();
    old.close();
  }
}

}  // namespace ndgc
