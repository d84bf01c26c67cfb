// MaxPool2d and AvgPool2d: the blocks of the 2-D pools (ndgc/nn_layers.hpp).
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/nn_layers.hpp"
#include "nn/window_shape.hpp"

namespace ndgc::nn {
namespace {

// As the ops: the padding may be at most half the kernel.
void check_pool(const std::string& block, Pair kernel, Pair stride, Pair padding) {
  detail::check_window(block, kernel, stride, padding, {1, 1});
  if (padding[0] * 2 > kernel[0] || padding[1] * 2 > kernel[1])
    throw InvalidArgument(fmt::format("{}: padding ({}, {}) must be at most half the kernel ({}, {})", block,
                                      padding[0], padding[1], kernel[0], kernel[1]));
}

}  // namespace

namespace detail {

Pool2d::Pool2d(const char* name, Pair kernel, Pair stride, Pair padding)
    : name_(name), kernel_(kernel), stride_(stride), padding_(padding) {
  check_pool(describe(), kernel, stride, padding);
}

NDList Pool2d::forward(const NDList& inputs) { return NDList{pool(inputs.head(), kernel_, stride_, padding_)}; }

Shape Pool2d::output_shape(const Shape& input) const {
  const std::int64_t channels = input.rank() == 4 ? input[1] : 0;
  return window_output_shape(describe(), input, channels, kernel_, stride_, padding_, {1, 1});
}

std::string Pool2d::describe() const {
  std::string text = fmt::format("{}({}x{}, stride {}x{}", name_, kernel_[0], kernel_[1], stride_[0], stride_[1]);
  if (padding_ != Pair{0, 0}) text += fmt::format(", padding {}x{}", padding_[0], padding_[1]);
  return text + ")";
}

}  // namespace detail

MaxPool2d::MaxPool2d(Pair kernel, Pair stride, Pair padding) : Pool2d("MaxPool2d", kernel, stride, padding) {}
NDArray MaxPool2d::pool(const NDArray& x, Pair kernel, Pair stride, Pair padding) const {
  return max_pool2d(x, kernel, stride, padding);
}

AvgPool2d::AvgPool2d(Pair kernel, Pair stride, Pair padding) : Pool2d("AvgPool2d", kernel, stride, padding) {}
NDArray AvgPool2d::pool(const NDArray& x, Pair kernel, Pair stride, Pair padding) const {
  return avg_pool2d(x, kernel, stride, padding);
}

}  // namespace ndgc::nn
