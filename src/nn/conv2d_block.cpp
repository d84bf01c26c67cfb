// Conv2d: the block of conv2d (ndgc/nn_layers.hpp).
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/nn_layers.hpp"
#include "nn/window_shape.hpp"

namespace ndgc::nn {

Conv2d::Conv2d(std::int64_t out_channels, Pair kernel, Pair stride, Pair padding, Pair dilation,
               std::int64_t groups, bool bias)
    : out_channels_(out_channels), groups_(groups), kernel_(kernel), stride_(stride), padding_(padding),
      dilation_(dilation) {
  if (out_channels <= 0)
    throw InvalidArgument(fmt::format("{}: out_channels must be positive, not {}", describe(), out_channels));
  if (groups < 1 || out_channels % groups != 0)
    throw InvalidArgument(
        fmt::format("{}: groups = {} must be at least 1 and divide out_channels {}", describe(), groups, out_channels));
  detail::check_window(describe(), kernel, stride, padding, dilation);
  weight_ = &add_parameter("weight", Parameter::Kind::weight);
  if (bias) bias_ = &add_parameter("bias", Parameter::Kind::bias);
}

Shape Conv2d::output_shape(const Shape& input_shape) const {
  if (input_shape.rank() == 4 && input_shape[1] % groups_ != 0)
    throw InvalidArgument(fmt::format("{}: groups = {} does not divide the {} input channels of {}", describe(),
                                      groups_, input_shape[1], input_shape.to_string()));
  return detail::window_output_shape(describe(), input_shape, out_channels_, kernel_, stride_, padding_, dilation_);
}

void Conv2d::initialize_self(const ManagerRef& manager, const Shape& input_shape, DataType dtype) {
  output_shape(input_shape);  // checks the input
  in_channels_ = input_shape[1];
  weight_->initialize(manager, Shape{out_channels_, in_channels_ / groups_, kernel_[0], kernel_[1]}, dtype,
                      XavierInitializer());
  if (bias_) bias_->initialize(manager, Shape{out_channels_}, dtype, ConstantInitializer(0));
}

NDList Conv2d::forward(const NDList& inputs) {
  return NDList{conv2d(inputs.head(), weight_->array(), bias_ ? bias_->array() : NDArray{}, stride_, padding_,
                       dilation_, groups_)};
}

std::string Conv2d::describe() const {
  std::string text = in_channels_ ? fmt::format("Conv2d({} -> {}, {}x{}", in_channels_, out_channels_, kernel_[0],
                                                kernel_[1])
                                  : fmt::format("Conv2d(? -> {}, {}x{}", out_channels_, kernel_[0], kernel_[1]);
  if (stride_ != Pair{1, 1}) text += fmt::format(", stride {}x{}", stride_[0], stride_[1]);
  if (padding_ != Pair{0, 0}) text += fmt::format(", padding {}x{}", padding_[0], padding_[1]);
  if (dilation_ != Pair{1, 1}) text += fmt::format(", dilation {}x{}", dilation_[0], dilation_[1]);
  if (groups_ != 1) text += fmt::format(", groups {}", groups_);
  return text + ")";
}

}  // namespace ndgc::nn
