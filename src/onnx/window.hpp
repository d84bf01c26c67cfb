// The window of a convolution or pooling node (kernel, strides, pads,
// dilations, auto_pad) over one, two or three spatial axes, as ndgc's 2-D
// ops take it: a 3-D window is a 2-D one over its last two axes and a depth
// axis that onnx/volume.hpp runs as slices.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ndgc/layers.hpp"
#include "onnx/node.hpp"

namespace ndgc::onnx::detail {

// The first of three spatial axes.
struct DepthAxis {
  std::int64_t kernel = 1, stride = 1, dilation = 1, begin = 0, end = 0;
};

struct Window {
  int spatial = 2;  // 1: the op runs on a height-1 image; 3: `depth` is the first axis
  Pair kernel{1, 1}, stride{1, 1}, padding{0, 0}, dilation{1, 1};
  Pair begin{0, 0}, end{0, 0};  // the pads before and after each axis
  DepthAxis depth;
  std::string problem;  // why ndgc cannot run it; "" when it can
  // Pads differing between the sides, or wider than `limit` allows (the
  // pools: half the kernel): the kernel pads the input itself first.
  bool explicit_padding(bool half_kernel_limit) const {
    for (int a = 0; a < 2; ++a)
      if (begin[std::size_t(a)] != end[std::size_t(a)] ||
          (half_kernel_limit && 2 * begin[std::size_t(a)] > kernel[std::size_t(a)]))
        return true;
    return false;
  }
};

// `kernel`: the spatial kernel dims (from kernel_shape or the weight);
// `input`: the spatial input dims, -1 where unknown (SAME padding needs them).
Window window_of(const Node& node, const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& input);

}  // namespace ndgc::onnx::detail
