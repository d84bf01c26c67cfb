// Window checks and output shapes of the windowed blocks (window_shape.hpp).
#include "nn/window_shape.hpp"

#include <fmt/format.h>

#include "ndgc/error.hpp"

namespace ndgc::nn::detail {
namespace {

void check_pair(const std::string& block, const char* what, Pair p, std::int64_t least) {
  if (p[0] < least || p[1] < least)
    throw InvalidArgument(fmt::format("{}: {} ({}, {}) must be at least {} in both axes", block, what, p[0], p[1], least));
}

}  // namespace

void check_window(const std::string& block, Pair kernel, Pair stride, Pair padding, Pair dilation) {
  check_pair(block, "kernel", kernel, 1);
  check_pair(block, "stride", stride, 1);
  check_pair(block, "padding", padding, 0);
  check_pair(block, "dilation", dilation, 1);
}

Shape window_output_shape(const std::string& block, const Shape& input, std::int64_t channels, Pair kernel,
                          Pair stride, Pair padding, Pair dilation) {
  if (input.rank() != 4)
    throw ShapeMismatch(fmt::format("{}: the input must be [N, C, H, W], not {}", block, input.to_string()));
  Shape out{input[0], channels, 0, 0};
  for (int a = 0; a < 2; ++a) {
    const std::int64_t in = input[2 + a], padded = in + 2 * padding[std::size_t(a)];
    const std::int64_t span = dilation[std::size_t(a)] * (kernel[std::size_t(a)] - 1) + 1;
    if (span > padded)
      throw InvalidArgument(fmt::format("{}: the kernel (dilated: {} along the {}) is larger than the padded input "
                                        "{}: {} + 2 x {} = {}",
                                        block, span, a ? "width" : "height", input.to_string(), in,
                                        padding[std::size_t(a)], padded));
    out[2 + a] = (padded - span) / stride[std::size_t(a)] + 1;
  }
  return out;
}

}  // namespace ndgc::nn::detail
