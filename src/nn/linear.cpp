// Linear: x [..., in] · weight [in, units] + bias [units].
//
// The weight is stored [in, units] so that forward is x.matmul(w) with no
// transpose: x comes first, so the result joins the batch's manager, and the
// GEMM reads both operands row-major. With a bias, forward is one fused op
// (ndgc::linear, Note [Fused linear]). Weights default to Xavier uniform,
// biases to zeros.
// Thread-safety: forward() is safe on several threads once initialized.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/nn.hpp"

namespace ndgc::nn {

Linear::Linear(std::int64_t units, bool bias) : units_(units) {
  if (units <= 0) throw InvalidArgument(fmt::format("Linear: units must be positive, not {}", units));
  weight_ = &add_parameter("weight", Parameter::Kind::weight);
  if (bias) bias_ = &add_parameter("bias", Parameter::Kind::bias);
}

void Linear::initialize_self(const ManagerRef& manager, const Shape& input_shape, DataType dtype) {
  if (input_shape.rank() < 1)
    throw InvalidArgument(fmt::format("Linear: the input shape {} has no feature axis", input_shape.to_string()));
  in_ = input_shape[input_shape.rank() - 1];
  weight_->initialize(manager, Shape{in_, units_}, dtype, XavierInitializer());
  if (bias_) bias_->initialize(manager, Shape{units_}, dtype, ConstantInitializer(0));
}

NDList Linear::forward(const NDList& inputs) {
  if (bias_) return NDList{linear(inputs.head(), weight_->array(), bias_->array())};
  return NDList{inputs.head().matmul(weight_->array())};
}

Shape Linear::output_shape(const Shape& input_shape) const {
  Shape out = input_shape;
  if (out.rank() == 0) throw InvalidArgument("Linear: a scalar input has no feature axis");
  out[out.rank() - 1] = units_;
  return out;
}

std::string Linear::describe() const {
  return in_ ? fmt::format("Linear({} -> {})", in_, units_) : fmt::format("Linear(? -> {})", units_);
}

}  // namespace ndgc::nn
