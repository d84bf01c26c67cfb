// Dropout and Embedding: the blocks of dropout and embedding (ndgc/nn_layers.hpp).
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/nn_layers.hpp"

namespace ndgc::nn {

Dropout::Dropout(double p) : p_(p) {
  if (!(p >= 0 && p < 1))
    throw InvalidArgument(fmt::format("Dropout({}): p is outside [0, 1); it is the probability of zeroing an element", p));
}

NDList Dropout::forward(const NDList& inputs, bool training) {
  return NDList{dropout(inputs.head(), p_, training)};
}

std::string Dropout::describe() const { return fmt::format("Dropout({})", p_); }

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t dim) : num_embeddings_(num_embeddings), dim_(dim) {
  if (num_embeddings <= 0 || dim <= 0)
    throw InvalidArgument(fmt::format("{}: num_embeddings and dim must be positive", describe()));
  weight_ = &add_parameter("weight", Parameter::Kind::weight);
}

Shape Embedding::output_shape(const Shape& input_shape) const {
  Shape out = input_shape;
  out.push_back(dim_);
  return out;
}

void Embedding::initialize_self(const ManagerRef& manager, const Shape&, DataType dtype) {
  weight_->initialize(manager, Shape{num_embeddings_, dim_}, dtype, NormalInitializer(1.0));
}

NDList Embedding::forward(const NDList& inputs) { return NDList{embedding(inputs.head(), weight_->array())}; }

std::string Embedding::describe() const { return fmt::format("Embedding({} x {})", num_embeddings_, dim_); }

}  // namespace ndgc::nn
