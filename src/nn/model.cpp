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

}  // namespace ndgc
