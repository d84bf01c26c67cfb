// ConvTranspose as a convolution: the input spread out by the stride (zeros
// between its elements), padded by what the transposed window needs, and
// convolved with the kernel flipped and its channel axes swapped. Each step
// is an ndgc op (concat, reshape, slices, a reversing gather, conv2d), so it
// has their gradients and device kernels. One, two or three spatial axes
// (three as in Note [Volumes as slices of depth]).
//
//   out = s (in - 1) + output_padding + (k - 1) d + 1 - pad_begin - pad_end
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/layers.hpp"
#include "onnx/kernel_support.hpp"
#include "onnx/volume.hpp"

namespace ndgc::onnx::detail {
namespace {

// x with s - 1 zeros after every element of `axis` but the last.
NDArray spread(const RunContext& c, const NDArray& x, int axis, std::int64_t s) {
  if (s == 1) return x;
  Shape zeros_shape = x.shape();
  zeros_shape.insert(axis + 1, s - 1);
  NDArray with_gaps = concat(NDList{x.expand_dims(axis + 1), c.manager.zeros(zeros_shape, x.dtype())}, axis + 1);
  Shape merged = x.shape();
  merged[axis] *= s;
  NDIndex keep;
  for (int k = 0; k < axis; ++k) keep.add_all();
  keep.add_slice(0, (x.shape()[axis] - 1) * s + 1);
  return with_gaps.reshape(merged).get(keep);
}

struct Axis {
  std::int64_t in, k, s, d, output_padding, pad_begin, pad_end;
};

// The pads of one spatial axis, from pads, auto_pad or output_shape.
void resolve_pads(const Node& node, Axis& a, std::size_t i, std::size_t spatial) {
  const std::vector<std::int64_t> pads = node.ints("pads", std::vector<std::int64_t>(2 * spatial, 0));
  const std::vector<std::int64_t> output_shape = node.ints("output_shape");
  const std::string auto_pad = node.s("auto_pad", "NOTSET");
  a.pad_begin = pads.at(i), a.pad_end = pads.at(i + spatial);
  std::int64_t want = -1;
  if (!output_shape.empty()) want = output_shape.at(output_shape.size() - spatial + i);
  else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") want = a.in * a.s;
  else if (auto_pad == "VALID") a.pad_begin = a.pad_end = 0;
  if (want < 0) return;
  // ONNX's rule, with floor division (a negative total is an output larger than the natural one).
  const std::int64_t total = a.s * (a.in - 1) + a.output_padding + (a.k - 1) * a.d + 1 - want;
  const std::int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
  a.pad_begin = auto_pad == "SAME_UPPER" ? half : total - half;
  a.pad_end = total - a.pad_begin;
}

void run_conv_transpose(RunContext& c) {
  NDArray x = c.in(0), w = c.in(1);
  const int spatial = x.rank() - 2;
  if (spatial < 1 || spatial > 3 || w.rank() != x.rank())
    throw InvalidArgument(fmt::format("onnx: {}: input {} and weight {}: ndgc runs 1, 2 and 3 spatial axes",
                                      c.node.label(), x.shape().to_string(), w.shape().to_string()));
  const std::int64_t groups = c.node.i("group", 1), channels = x.shape()[1];
  if (groups < 1 || channels % groups != 0 || w.shape()[0] != channels)
    throw ShapeMismatch(fmt::format("onnx: {}: weight {} does not fit {} input channels in {} groups", c.node.label(),
                                    w.shape().to_string(), channels, groups));
  const auto n = std::size_t(spatial);
  const std::vector<std::int64_t> strides = c.node.ints("strides", std::vector<std::int64_t>(n, 1));
  const std::vector<std::int64_t> dilations = c.node.ints("dilations", std::vector<std::int64_t>(n, 1));
  const std::vector<std::int64_t> output_padding = c.node.ints("output_padding", std::vector<std::int64_t>(n, 0));
  if (strides.size() != n || dilations.size() != n || output_padding.size() != n)
    throw InvalidArgument(fmt::format("onnx: {}: strides, dilations or output_padding do not match the kernel's rank",
                                      c.node.label()));
  // The kernel: [C, O/g, k...] -> [O, C/g, k...], each window reversed.
  const std::int64_t out_per_group = w.shape()[1];
  Shape grouped{groups, channels / groups, out_per_group};
  for (int k = 2; k < w.rank(); ++k) grouped.push_back(w.shape()[k]);
  std::vector<int> order{0, 2, 1};
  for (int k = 3; k < grouped.rank(); ++k) order.push_back(k);
  Shape flipped_shape{groups * out_per_group, channels / groups};
  for (int k = 2; k < w.rank(); ++k) flipped_shape.push_back(w.shape()[k]);
  NDArray kernel = w.reshape(grouped).permute(order).reshape(flipped_shape);
  for (int k = 2; k < w.rank(); ++k) {
    std::vector<std::int64_t> reversed;
    for (std::int64_t i = w.shape()[k] - 1; i >= 0; --i) reversed.push_back(i);
    kernel = gather_along(c, kernel, reversed, Shape{std::int64_t(reversed.size())}, k);
  }
  Pair dilation{1, 1};
  DepthTaps depth;
  for (std::size_t i = 0; i < n; ++i) {
    const int axis = 2 + int(i);
    Axis a{x.shape()[axis], w.shape()[axis], strides[i], dilations[i], output_padding[i], 0, 0};
    resolve_pads(c.node, a, i, n);
    x = spread(c, x, axis, a.s);
    const std::int64_t reach = (a.k - 1) * a.d;
    x = pad_constant(c, x, axis, reach - a.pad_begin, reach - a.pad_end + a.output_padding, 0.0);
    if (spatial == 3 && i == 0) depth = {a.k, 1, a.d};
    else dilation[spatial == 1 ? 1 : spatial == 3 ? i - 1 : i] = a.d;
  }
  if (spatial == 3) {
    c.outputs.push_back(conv_by_depth_slices(x, kernel, c.has(2) ? c.in(2) : NDArray{}, depth, {1, 1}, {0, 0},
                                             dilation, groups));
    return;
  }
  if (spatial == 1) x = x.expand_dims(2), kernel = kernel.expand_dims(2);
  NDArray y = conv2d(x, kernel, c.has(2) ? c.in(2) : NDArray{}, {1, 1}, {0, 0}, dilation, groups);
  c.outputs.push_back(spatial == 1 ? y.squeeze({2}) : y);
}

std::string conv_transpose_check(const CheckContext& c) {
  if (std::string why = floats_only(c); !why.empty()) return why;
  const auto& x = c.input_shapes.empty() ? std::nullopt : c.input_shapes[0];
  const std::size_t spatial = c.node.has("kernel_shape") ? c.node.ints("kernel_shape").size() : x ? x->size() - 2 : 2;
  if (spatial < 1 || spatial > 3) return fmt::format("{} spatial axes; ndgc runs 1, 2 and 3", spatial);
  return "";
}

}  // namespace

void add_conv_transpose_kernels(KernelTable& t) { t.add("ConvTranspose", {run_conv_transpose, conv_transpose_check}); }

}  // namespace ndgc::onnx::detail
