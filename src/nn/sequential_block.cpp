// SequentialBlock: children in a chain; initialization passes each child's
// output shape to the next.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/nn.hpp"

namespace ndgc::nn {

SequentialBlock& SequentialBlock::add(std::unique_ptr<Block> block) {
  add_child(std::to_string(children().size()), std::move(block));
  return *this;
}

NDList SequentialBlock::forward(const NDList& inputs, bool training) {
  if (children().empty()) return inputs;
  NDList x = children().front().second->forward(inputs, training);
  for (std::size_t i = 1; i < children().size(); ++i) x = children()[i].second->forward(x, training);
  return x;
}

Shape SequentialBlock::initialize(const ManagerRef& manager, const Shape& input_shape, DataType dtype) {
  initialize_self(manager, input_shape, dtype);
  Shape shape = input_shape;
  for (const auto& [name, child] : children()) shape = child->initialize(manager, shape, dtype);
  return shape;
}

Shape SequentialBlock::output_shape(const Shape& input_shape) const {
  Shape shape = input_shape;
  for (const auto& [name, child] : children()) shape = child->output_shape(shape);
  return shape;
}

std::string SequentialBlock::describe() const {
  std::string text = "Sequential(";
  for (std::size_t i = 0; i < children().size(); ++i) text += (i ? ", " : "") + children()[i].second->describe();
  return text + ")";
}

}  // namespace ndgc::nn
