// MaxPool2d and AvgPool2d: the blocks of the 2-D pools (ndgc/nn_layers.hpp).
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/nn_layers.hpp"
#include "nn/window_shape.hpp"

namespace ndgc::nn {
namespace {

std::string describe_pool(const char* name, Pair kernel, Pair stride, Pair padding) {
  std::string text = fmt::format("{}({}x{}, stride {}x{}", name, kernel[0], kernel[1], stride[0], stride[1]);
  if (padding != Pair{0, 0}) text += fmt::format(", padding {}x{}", padding[0], padding[1]);
  return text + ")";
}

// As the ops: the padding may be at most half the kernel.
void check_pool(const std::string& block, Pair kernel, Pair stride, Pair padding) {
  detail::check_window(block, kernel, stride, padding, {1, 1});
  if (padding[0] * 2 > kernel[0] || padding[1] * 2 > kernel[1])
    throw InvalidArgument(fmt::format("{}: padding ({}, {}) must be at most half the kernel ({}, {})", block,
                                      padding[0], padding[1], kernel[0], kernel[1]));
}

Shape pool_shape(const std::string& block, const Shape& input, Pair kernel, Pair stride, Pair padding) {
  const std::int64_t channels = input.rank() == 4 ? input[1] : 0;
  return detail::window_output_shape(block, input, channels, kernel, stride, padding, {1, 1});
}

}  // namespace

MaxPool2d::MaxPool2d(Pair kernel, Pair stride, Pair padding) : kernel_(kernel), stride_(stride), padding_(padding) {
  check_pool(describe(), kernel, stride, padding);
}
NDList MaxPool2d::forward(const NDList& inputs) {
  return NDList{max_pool2d(inputs.head(), kernel_, stride_, padding_)};
}
Shape MaxPool2d::output_shape(const Shape& input_shape) const {
  return pool_shape(describe(), input_shape, kernel_, stride_, padding_);
}
std::string MaxPool2d::describe() const { return describe_pool("MaxPool2d", kernel_, stride_, padding_); }

AvgPool2d::AvgPool2d(Pair kernel, Pair stride, Pair padding) : kernel_(kernel), stride_(stride), padding_(padding) {
  check_pool(describe(), kernel, stride, padding);
}
NDList AvgPool2d::forward(const NDList& inputs) {
  return NDList{avg_pool2d(inputs.head(), kernel_, stride_, padding_)};
}
Shape AvgPool2d::output_shape(const Shape& input_shape) const {
  return pool_shape(describe(), input_shape, kernel_, stride_, padding_);
}
std::string AvgPool2d::describe() const { return describe_pool("AvgPool2d", kernel_, stride_, padding_); }

}  // namespace ndgc::nn
