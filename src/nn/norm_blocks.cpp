// BatchNorm and LayerNorm: the blocks of the normalisations (ndgc/nn_layers.hpp).
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/nn_layers.hpp"

namespace ndgc::nn {
namespace {

void check_eps(const std::string& block, double eps) {
  if (!(eps > 0)) throw InvalidArgument(fmt::format("{}: eps must be positive, not {}", block, eps));
}

}  // namespace

BatchNorm::BatchNorm(double momentum, double eps) : momentum_(momentum), eps_(eps) {
  if (!(momentum >= 0 && momentum <= 1))
    throw InvalidArgument(fmt::format("{}: momentum {} is outside [0, 1]", describe(), momentum));
  check_eps(describe(), eps);
  gamma_ = &add_parameter("gamma", Parameter::Kind::other);
  beta_ = &add_parameter("beta", Parameter::Kind::other);
  running_mean_ = &add_parameter("running_mean", Parameter::Kind::running);
  running_var_ = &add_parameter("running_var", Parameter::Kind::running);
}

Shape BatchNorm::output_shape(const Shape& input_shape) const {
  if (input_shape.rank() < 2)
    throw ShapeMismatch(fmt::format("{}: the input must be [N, C, ...], not {}", describe(), input_shape.to_string()));
  if (channels_ && input_shape[1] != channels_)
    throw ShapeMismatch(fmt::format("{}: the input {} has {} channels, the block {}", describe(),
                                    input_shape.to_string(), input_shape[1], channels_));
  return input_shape;
}

void BatchNorm::initialize_self(const ManagerRef& manager, const Shape& input_shape, DataType dtype) {
  output_shape(input_shape);
  const Shape c{input_shape[1]};
  gamma_->initialize(manager, c, dtype, ConstantInitializer(1));
  beta_->initialize(manager, c, dtype, ConstantInitializer(0));
  running_mean_->initialize(manager, c, dtype, ConstantInitializer(0));
  running_var_->initialize(manager, c, dtype, ConstantInitializer(1));
  channels_ = input_shape[1];
}

NDList BatchNorm::forward(const NDList& inputs, bool training) {
  return NDList{batch_norm(inputs.head(), gamma_->array(), beta_->array(), running_mean_->array(),
                           running_var_->array(), training, momentum_, eps_)};
}

std::string BatchNorm::describe() const {
  return channels_ ? fmt::format("BatchNorm({})", channels_) : std::string("BatchNorm(?)");
}

LayerNorm::LayerNorm(double eps) : eps_(eps) {
  check_eps(describe(), eps);
  gamma_ = &add_parameter("gamma", Parameter::Kind::other);
  beta_ = &add_parameter("beta", Parameter::Kind::other);
}

Shape LayerNorm::output_shape(const Shape& input_shape) const {
  if (input_shape.rank() < 1)
    throw ShapeMismatch(fmt::format("{}: a scalar input has no axis to normalise", describe()));
  if (features_ && input_shape[input_shape.rank() - 1] != features_)
    throw ShapeMismatch(fmt::format("{}: the input {} ends in {}, not {}", describe(), input_shape.to_string(),
                                    input_shape[input_shape.rank() - 1], features_));
  return input_shape;
}

void LayerNorm::initialize_self(const ManagerRef& manager, const Shape& input_shape, DataType dtype) {
  output_shape(input_shape);
  const Shape d{input_shape[input_shape.rank() - 1]};
  gamma_->initialize(manager, d, dtype, ConstantInitializer(1));
  beta_->initialize(manager, d, dtype, ConstantInitializer(0));
  features_ = d[0];
}

NDList LayerNorm::forward(const NDList& inputs) {
  return NDList{layer_norm(inputs.head(), gamma_->array(), beta_->array(), eps_)};
}

std::string LayerNorm::describe() const {
  return features_ ? fmt::format("LayerNorm({})", features_) : std::string("LayerNorm(?)");
}

}  // namespace ndgc::nn
