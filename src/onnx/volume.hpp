// Convolutions and pools over three spatial axes [N, C, D, H, W], built from
// ndgc's 2-D ops.
//
// Note [Volumes as slices of depth]
// ndgc's window ops (conv2d, the pools) run over two spatial axes. A 3-D
// window runs as those over the last two, with the first, depth, taken in
// slices:
//   - a convolution is one 2-D convolution of N·D_out images: output depth
//     z's image holds, for each input channel c and depth tap k, the slice
//     z·s + k·d as channel c·kD + k, and the kernel [O, C/G, kD, kH, kW] read
//     as [O, C/G·kD, kH, kW] has its taps in that order (each group's
//     channels stay together), so the 2-D product sums over channels and
//     depth taps at once;
//   - a pool's window is a box, and a max or a sum over a box is the max or
//     sum over depth of the ones over each plane: the 2-D pool runs on the
//     C·D planes of each image, then depth's windows combine its results.
// Each step is an ndgc op (permute, strided slices, reshape, conv2d, the
// pools, stack, maximum), so the result has their gradients and device
// kernels and keeps the same-bits rule. It costs a copy of the input per
// depth tap (the stacked images are k_D times the input).
#pragma once

#include <cstdint>

#include "ndgc/layers.hpp"
#include "onnx/kernels.hpp"

namespace ndgc::onnx::detail {

// The depth axis of a window: its kernel, stride and dilation.
struct DepthTaps {
  std::int64_t kernel = 1, stride = 1, dilation = 1;
};

// x [N, C, D, H, W] (depth already padded) convolved with weight
// [O, C / groups, kD, kH, kW]; the last two axes as conv2d takes them.
NDArray conv_by_depth_slices(const NDArray& x, const NDArray& weight, const NDArray& bias, DepthTaps depth,
                             Pair stride, Pair padding, Pair dilation, std::int64_t groups);

// The max (or the sum) over depth windows of x [N, C, D, H, W], depth already
// padded: [N, C, D_out, H, W].
NDArray max_over_depth(const NDArray& x, DepthTaps depth);
NDArray sum_over_depth(const NDArray& x, DepthTaps depth);

// x [N, C, D, H, W] as C · D planes [N, C·D, H, W], and a pool's result back.
NDArray as_planes(const NDArray& x);
NDArray from_planes(const NDArray& y, const Shape& volume);

}  // namespace ndgc::onnx::detail
