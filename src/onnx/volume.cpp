// See volume.hpp, Note [Volumes as slices of depth].
#include "onnx/volume.hpp"

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "support/assert.hpp"

namespace ndgc::onnx::detail {
namespace {

// The output length of depth windows over `length` elements.
std::int64_t depth_out(std::int64_t length, DepthTaps depth) {
  const std::int64_t span = (depth.kernel - 1) * depth.dilation + 1;
  if (length < span)
    throw ShapeMismatch(fmt::format("onnx: a depth of {} is shorter than the window's span of {}", length, span));
  return (length - span) / depth.stride + 1;
}

// Tap k's slices of `axis`: k·d, k·d + s, ... (`count` of them).
NDArray tap(const NDArray& x, int axis, std::int64_t k, DepthTaps depth, std::int64_t count) {
  NDIndex at;
  for (int a = 0; a < axis; ++a) at.add_all();
  const std::int64_t first = k * depth.dilation;
  at.add_slice(first, first + (count - 1) * depth.stride + 1, depth.stride);
  return x.get(at);
}

template <typename Combine>
NDArray over_depth(const NDArray& x, DepthTaps depth, Combine combine) {
  const std::int64_t out = depth_out(x.shape()[2], depth);
  NDArray y = tap(x, 2, 0, depth, out);
  for (std::int64_t k = 1; k < depth.kernel; ++k) y = combine(y, tap(x, 2, k, depth, out));
  return y.contiguous();  // one tap is a strided view of the padded input: copied, not pinning the padding
}

}  // namespace

NDArray conv_by_depth_slices(const NDArray& x, const NDArray& weight, const NDArray& bias, DepthTaps depth,
                             Pair stride, Pair padding, Pair dilation, std::int64_t groups) {
  NDGC_ASSERT(x.rank() == 5 && weight.rank() == 5, "a volume and its kernel have five axes");
  const Shape xs = x.shape(), ws = weight.shape();
  const std::int64_t n = xs[0], channels = xs[1], out = depth_out(xs[2], depth);
  const NDArray slices = x.permute({0, 2, 1, 3, 4});  // [N, D, C, H, W]: a tap's slices are images
  NDList taps;
  for (std::int64_t k = 0; k < depth.kernel; ++k) taps.push_back(tap(slices, 1, k, depth, out));
  // [N, D', C, kD, H, W] as N·D' images of C·kD channels, channel c·kD + k
  // tap k of channel c: the kernel [O, C/G, kD, kH, kW] read as [O, C/G·kD,
  // kH, kW] has the same order, and each group's channels stay together.
  const NDArray images = stack(taps, 3).reshape(Shape{n * out, channels * depth.kernel, xs[3], xs[4]});
  const NDArray planes = weight.reshape(Shape{ws[0], ws[1] * ws[2], ws[3], ws[4]});
  const NDArray y = conv2d(images, planes, bias, stride, padding, dilation, groups);
  const Shape ys = y.shape();
  return y.reshape(Shape{n, out, ys[1], ys[2], ys[3]}).permute({0, 2, 1, 3, 4});
}

NDArray max_over_depth(const NDArray& x, DepthTaps depth) {
  return over_depth(x, depth, [](const NDArray& a, const NDArray& b) { return a.maximum(b); });
}

NDArray sum_over_depth(const NDArray& x, DepthTaps depth) {
  return over_depth(x, depth, [](const NDArray& a, const NDArray& b) { return a.add(b); });
}

NDArray as_planes(const NDArray& x) {
  const Shape s = x.shape();
  return x.reshape(Shape{s[0], s[1] * s[2], s[3], s[4]});
}

NDArray from_planes(const NDArray& y, const Shape& volume) {
  const Shape s = y.shape();
  return y.reshape(Shape{volume[0], volume[1], volume[2], s[2], s[3]});
}

}  // namespace ndgc::onnx::detail
