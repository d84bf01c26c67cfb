// What the windowed blocks (Conv2d, MaxPool2d, AvgPool2d) share: checking
// their window when constructed and the output shape of an NCHW input, with
// errors that start with the block's description.
#pragma once

#include <cstdint>
#include <string>

#include "ndgc/layers.hpp"
#include "ndgc/shape.hpp"

namespace ndgc::nn::detail {

// InvalidArgument unless kernel, stride and dilation are >= 1 and padding >= 0.
void check_window(const std::string& block, Pair kernel, Pair stride, Pair padding, Pair dilation);

// [N, channels, H', W'] for input [N, C, H, W]: ShapeMismatch when the input
// is not rank 4, InvalidArgument when the dilated kernel is larger than the
// padded input.
Shape window_output_shape(const std::string& block, const Shape& input, std::int64_t channels, Pair kernel,
                          Pair stride, Pair padding, Pair dilation);

}  // namespace ndgc::nn::detail
