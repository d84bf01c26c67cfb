// LSTM: a multi-layer LSTM block over ndgc::lstm (ops/lstm.cpp).
//
// The parameters of layer l are "l<l>.weight_ih" [F_l, 4H], "l<l>.weight_hh"
// [H, 4H] and "l<l>.bias" [4H], stored [in, out] as Linear's weight so that
// the input projection is x.matmul(w). PyTorch keeps two biases per layer
// (b_ih and b_hh), which only ever appear summed: one [4H] bias here, their
// sum when porting a PyTorch model. Weights default to Xavier uniform, biases
// to zeros. Shapes of h0 and c0 are checked by the op, whose errors name them.
// Thread-safety: forward() is safe on several threads once initialized.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/lstm.hpp"
#include "ndgc/nn_layers.hpp"

namespace ndgc::nn {

LSTM::LSTM(std::int64_t hidden_size, std::int64_t num_layers) : hidden_(hidden_size), layers_(num_layers) {
  if (hidden_size <= 0)
    throw InvalidArgument(fmt::format("LSTM: hidden_size must be positive, not {}", hidden_size));
  if (num_layers <= 0) throw InvalidArgument(fmt::format("LSTM: num_layers must be positive, not {}", num_layers));
  for (std::int64_t l = 0; l < num_layers; ++l) {
    weights_.push_back(&add_parameter(fmt::format("l{}.weight_ih", l), Parameter::Kind::weight));
    weights_.push_back(&add_parameter(fmt::format("l{}.weight_hh", l), Parameter::Kind::weight));
    weights_.push_back(&add_parameter(fmt::format("l{}.bias", l), Parameter::Kind::bias));
  }
}

void LSTM::initialize_self(const ManagerRef& manager, const Shape& input_shape, DataType dtype) {
  if (input_shape.rank() != 3)
    throw InvalidArgument(fmt::format("LSTM: the input shape {} has rank {}, but must be [B, T, F] (rank 3)",
                                      input_shape.to_string(), input_shape.rank()));
  in_ = input_shape[2];
  const std::int64_t gates = 4 * hidden_;
  for (std::int64_t l = 0; l < layers_; ++l) {
    Parameter** w = &weights_[std::size_t(3 * l)];
    w[0]->initialize(manager, Shape{l == 0 ? in_ : hidden_, gates}, dtype, XavierInitializer());
    w[1]->initialize(manager, Shape{hidden_, gates}, dtype, XavierInitializer());
    w[2]->initialize(manager, Shape{gates}, dtype, ConstantInitializer(0));
  }
}

NDList LSTM::forward(const NDList& inputs) {
  if (inputs.size() != 1 && inputs.size() != 3)
    throw InvalidArgument(fmt::format("LSTM: takes {{x}} or {{x, h0, c0}}, not {} inputs", inputs.size()));
  NDList weights;
  for (Parameter* p : weights_) weights.push_back(p->array());
  if (inputs.size() == 1) return lstm(inputs[0], weights);
  return lstm(inputs[0], weights, inputs[1], inputs[2]);
}

Shape LSTM::output_shape(const Shape& input_shape) const {
  if (input_shape.rank() != 3)
    throw InvalidArgument(fmt::format("LSTM: the input shape {} has rank {}, but must be [B, T, F] (rank 3)",
                                      input_shape.to_string(), input_shape.rank()));
  return Shape{input_shape[0], input_shape[1], hidden_};
}

std::string LSTM::describe() const {
  const std::string in = in_ ? std::to_string(in_) : "?";
  return fmt::format("LSTM({} -> {}, {} layer{})", in, hidden_, layers_, layers_ == 1 ? "" : "s");
}

}  // namespace ndgc::nn
