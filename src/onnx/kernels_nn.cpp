// Neural-network kernels: MatMul (and MatMul+Add, fused by graph_fusion.cpp),
// Gemm, Conv, the pools, BatchNormalization, LayerNormalization, Dropout,
// Softmax and LogSoftmax, on ndgc's layer ops.
// A 1-D convolution or pool runs as the 2-D op on a height-1 image, a 3-D
// one as 2-D ops on slices of depth (Note [Volumes as slices of depth]).
#include <limits>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/layers.hpp"
#include "onnx/kernel_support.hpp"
#include "onnx/volume.hpp"
#include "onnx/window.hpp"

namespace ndgc::onnx::detail {
namespace {

// ---- products ----------------------------------------------------------------------

void run_gemm(RunContext& c) {
  NDArray a = c.node.i("transA", 0) ? c.in(0).transpose() : c.in(0);
  NDArray b = c.node.i("transB", 0) ? c.in(1).transpose() : c.in(1);
  const double alpha = c.node.f("alpha", 1.0f), beta = c.node.f("beta", 1.0f);
  if (c.has(2) && alpha == 1.0 && beta == 1.0 && c.in(2).rank() == 1 && c.in(2).shape()[0] == b.shape()[1]) {
    c.outputs.push_back(linear(a, b, c.in(2)));
    return;
  }
  NDArray y = a.matmul(b);
  if (alpha != 1.0) y = y.mul(alpha);
  if (c.has(2)) y = y.add(beta == 1.0 ? c.in(2) : c.in(2).mul(beta));
  c.outputs.push_back(y);
}

// ---- windows -------------------------------------------------------------------------

std::vector<std::int64_t> spatial_dims(const std::optional<std::vector<std::int64_t>>& shape) {
  if (!shape || shape->size() < 2) return {};
  return {shape->begin() + 2, shape->end()};
}

std::vector<std::int64_t> spatial_dims(const Shape& shape) {
  if (shape.rank() < 2) return {};  // window_of then refuses it: 0 spatial axes
  return {shape.begin() + 2, shape.end()};
}

// The node's kernel dims: kernel_shape, else the weight's spatial dims.
std::vector<std::int64_t> kernel_dims(const Node& node, const std::optional<std::vector<std::int64_t>>& weight) {
  if (node.has("kernel_shape")) return node.ints("kernel_shape");
  return spatial_dims(weight);
}

// The window a run uses; a problem the load-time check could not see throws.
Window run_window(const RunContext& c, const std::vector<std::int64_t>& kernel) {
  Window w = window_of(c.node, kernel, spatial_dims(c.in(0).shape()));
  if (!w.problem.empty()) throw InvalidArgument(fmt::format("onnx: {}: {}", c.node.label(), w.problem));
  if (c.in(0).rank() != w.spatial + 2)
    throw ShapeMismatch(fmt::format("onnx: {}: input {} does not have the batch, channel and {} spatial axes of "
                                    "the window",
                                    c.node.label(), c.in(0).shape().to_string(), w.spatial));
  return w;
}

// A 1-D op's operand as a height-1 image, and its result back.
NDArray as_2d(const NDArray& x, const Window& w) { return w.spatial == 1 ? x.expand_dims(2) : x; }
NDArray from_2d(const NDArray& y, const Window& w) { return w.spatial == 1 ? y.squeeze({2}) : y; }

std::string window_check(const CheckContext& c, const std::vector<std::int64_t>& kernel) {
  if (std::string why = floats_only(c); !why.empty()) return why;
  const Window w = window_of(c.node, kernel, spatial_dims(c.input_shapes.empty() ? std::nullopt : c.input_shapes[0]));
  return w.problem;
}

// x [N, C, H, W] with w.begin / w.end rows and columns of `value` around it
// (asymmetric or wide padding, which ndgc's 2-D ops do not take themselves).
NDArray pad_image(const RunContext& c, NDArray x, const Window& w, double value) {
  for (int a = 0; a < 2; ++a) x = pad_constant(c, x, 2 + a, w.begin[std::size_t(a)], w.end[std::size_t(a)], value);
  return x;
}

// The depth axis's taps, of a 3-D window.
DepthTaps taps(const Window& w) { return {w.depth.kernel, w.depth.stride, w.depth.dilation}; }

void run_conv(RunContext& c) {
  const NDArray& weight = c.in(1);
  const Window w = run_window(c, spatial_dims(weight.shape()));
  NDArray bias = c.has(2) ? c.in(2) : NDArray{};
  const std::int64_t groups = c.node.i("group", 1);
  NDArray x = as_2d(c.in(0), w);
  const bool explicit_pads = w.explicit_padding(false);
  const Pair padding = explicit_pads ? Pair{0, 0} : w.padding;
  if (w.spatial == 3) {  // Note [Volumes as slices of depth]
    x = pad_constant(c, x, 2, w.depth.begin, w.depth.end, 0.0);
    if (explicit_pads)
      for (int a = 0; a < 2; ++a) x = pad_constant(c, x, 3 + a, w.begin[std::size_t(a)], w.end[std::size_t(a)], 0.0);
    c.outputs.push_back(conv_by_depth_slices(x, weight, bias, taps(w), w.stride, padding, w.dilation, groups));
    return;
  }
  if (explicit_pads) x = pad_image(c, x, w, 0.0);
  NDArray y = conv2d(x, as_2d(weight, w), bias, w.stride, padding, w.dilation, groups);
  c.outputs.push_back(from_2d(y, w));
}

std::string conv_check(const CheckContext& c) {
  const auto weight = c.input_shapes.size() > 1 ? c.input_shapes[1] : std::nullopt;
  std::vector<std::int64_t> kernel = kernel_dims(c.node, weight);
  if (kernel.empty() && c.input_shapes[0]) kernel.assign(c.input_shapes[0]->size() - 2, 1);
  return window_check(c, kernel);
}

// AveragePool's ceil_mode: ONNX's output size and PyTorch's (which drops a
// last window that starts past the input) agree when there is no padding and
// no stride exceeds its kernel; ndgc runs only that case. "" when it is one.
std::string average_ceil_problem(const Window& w) {
  bool past = w.depth.begin + w.depth.end > 0 || w.depth.stride > w.depth.kernel;
  for (int a = 0; a < 2; ++a)
    past = past || w.begin[std::size_t(a)] + w.end[std::size_t(a)] > 0 ||
           w.stride[std::size_t(a)] > w.kernel[std::size_t(a)];
  return past ? "AveragePool's ceil_mode with padding, or with a stride past the kernel, is not supported" : "";
}

// A pool's padding on each side must be smaller than its kernel, as ONNX
// Runtime and PyTorch require: a window wholly in the padding has nothing to
// pool, and wide padding only multiplies the windows (a fuzzed AveragePool
// with kernel 3 and pads of 83 ran for 20 s). "" when it is.
std::string pads_within_kernel(const Window& w) {
  const auto wider = [](std::int64_t begin, std::int64_t end, std::int64_t kernel) {
    return begin >= kernel || end >= kernel
               ? fmt::format("pads ({} and {}) must be smaller than the kernel ({})", begin, end, kernel)
               : std::string();
  };
  if (w.spatial == 3)
    if (std::string why = wider(w.depth.begin, w.depth.end, w.depth.kernel); !why.empty()) return why;
  for (std::size_t a = 0; a < 2; ++a)
    if (std::string why = wider(w.begin[a], w.end[a], w.kernel[a]); !why.empty()) return why;
  return "";
}

std::string pool_check(const CheckContext& c) {
  if (c.node.op_type() != "MaxPool")
    for (std::int64_t d : c.node.ints("dilations"))
      if (d != 1) return fmt::format("dilated {} is not supported; ndgc dilates MaxPool only", c.node.op_type());
  const std::vector<std::int64_t> kernel = c.node.ints("kernel_shape");
  const Window w = window_of(c.node, kernel, spatial_dims(c.input_shapes.empty() ? std::nullopt : c.input_shapes[0]));
  if (!w.problem.empty()) return w.problem;
  if (std::string why = pads_within_kernel(w); !why.empty()) return why;
  if (c.node.op_type() == "AveragePool" && c.node.i("ceil_mode", 0) != 0)
    if (std::string why = average_ceil_problem(w); !why.empty()) return why;
  if (w.spatial == 3 && c.node.output_wanted(1) && c.node.i("storage_order", 0) != 0)
    return "MaxPool's column-major indices (storage_order 1) over 3 spatial axes are not supported";
  // MaxPool of uint8 and int32 runs in float64, which holds each value exactly.
  if (c.node.op_type() == "MaxPool" && !c.input_dtypes.empty() && c.input_dtypes[0] &&
      (*c.input_dtypes[0] == DataType::uint8 || *c.input_dtypes[0] == DataType::int32))
    return "";
  return floats_only(c);
}

// ceil_mode's extra elements at the end of an axis of `in` elements with
// `begin` and `end` padding: the output rounds up, as PyTorch's, but a last
// window that would start in the end's padding is dropped.
std::int64_t ceil_extra(std::int64_t in, std::int64_t begin, std::int64_t end, std::int64_t kernel, std::int64_t s,
                        std::int64_t d) {
  const std::int64_t span = (kernel - 1) * d + 1, padded = in + begin + end;
  std::int64_t out = (padded - span + s - 1) / s + 1;
  if ((out - 1) * s >= in + begin) --out;
  return std::max<std::int64_t>((out - 1) * s + span - padded, 0);
}

// ceil_mode on the last two axes of x [N, C, H, W]: the image gains the
// missing rows and columns at its end, of `fill`: -inf, which never wins a
// max window, or 0 for an average, whose divisor then counts the real elements.
NDArray ceil_padded(const RunContext& c, NDArray x, const Window& w,
                    double fill = -std::numeric_limits<double>::infinity()) {
  for (int a = 0; a < 2; ++a) {
    const auto i = std::size_t(a);
    const std::int64_t p = w.padding[i];
    const std::int64_t extra = ceil_extra(x.shape()[2 + a], p, p, w.kernel[i], w.stride[i], w.dilation[i]);
    if (extra > 0) x = pad_constant(c, x, 2 + a, 0, extra, fill);
  }
  return x;
}

// x [N, C, D, ...] with depth's padding of `fill` (and ceil_mode's extra).
NDArray pad_depth(const RunContext& c, const NDArray& x, const Window& w, double fill) {
  std::int64_t end = w.depth.end;
  if (c.node.i("ceil_mode", 0) != 0)
    end += ceil_extra(x.shape()[2], w.depth.begin, w.depth.end, w.depth.kernel, w.depth.stride, w.depth.dilation);
  return pad_constant(c, x, 2, w.depth.begin, end, fill);
}

// MaxPool's second output: where each maximum came from, as the flat index
// ((n · C + c) · H + h) · W + w into the input (((n · C + c) · D + d) · H + h)
// · W + w over three axes; storage_order 1, column major over two axes:
// ((n · C + c) · W + w) · H + h), the first of equal maxima in the window's
// row-major order. Found on the host from the input's values; x is
// [N, C, H, W], or [N, C, D, H, W] with w.spatial 3.
NDArray max_positions(const RunContext& c, const NDArray& x, const Window& w, const Shape& out) {
  const bool volume = w.spatial == 3;
  const int a = volume ? 3 : 2;  // the height axis
  const std::int64_t planes = x.shape()[0] * x.shape()[1], h = x.shape()[a], wd = x.shape()[a + 1];
  const std::int64_t depth = volume ? x.shape()[2] : 1, od = volume ? out[2] : 1, oh = out[a], ow = out[a + 1];
  const DepthAxis dw = volume ? w.depth : DepthAxis{};
  const bool column_major = c.node.i("storage_order", 0) != 0;
  const std::vector<double> v = read_doubles(x);
  std::vector<std::int64_t> at;
  at.reserve(std::size_t(planes * od * oh * ow));
  for (std::int64_t plane = 0; plane < planes; ++plane)
    for (std::int64_t z = 0; z < od; ++z)
      for (std::int64_t y = 0; y < oh; ++y)
        for (std::int64_t xo = 0; xo < ow; ++xo) {
          std::int64_t best = -1;
          for (std::int64_t kz = 0; kz < dw.kernel; ++kz) {
            const std::int64_t iz = z * dw.stride - dw.begin + kz * dw.dilation;
            if (iz < 0 || iz >= depth) continue;
            for (std::int64_t ky = 0; ky < w.kernel[0]; ++ky)
              for (std::int64_t kx = 0; kx < w.kernel[1]; ++kx) {
                const std::int64_t iy = y * w.stride[0] - w.begin[0] + ky * w.dilation[0],
                                   ix = xo * w.stride[1] - w.begin[1] + kx * w.dilation[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                const std::int64_t i = ((plane * depth + iz) * h + iy) * wd + ix;
                if (best < 0 || v[std::size_t(i)] > v[std::size_t(best)]) best = i;
              }
          }
          best = std::max<std::int64_t>(best, 0);
          if (column_major) best = (best / (h * wd) * wd + best % wd) * h + best % (h * wd) / wd;
          at.push_back(best);
        }
  return make_ints(c, at, out);
}

// The max over the windows of the last two axes of x [N, C, H, W].
NDArray max_pool_planes(const RunContext& c, NDArray x, Window w) {
  if (w.explicit_padding(true)) {  // -inf never wins a window
    x = pad_image(c, x, w, -std::numeric_limits<double>::infinity());
    w.padding = {0, 0};
  }
  if (c.node.i("ceil_mode", 0) != 0) x = ceil_padded(c, x, w);
  return max_pool2d(x, w.kernel, w.stride, w.padding, w.dilation);
}

void run_max_pool(RunContext& c) {
  const Window w = run_window(c, c.node.ints("kernel_shape"));
  const DataType dtype = c.in(0).dtype();
  const NDArray x = is_floating(dtype) ? c.in(0) : c.in(0).to_type(DataType::float64);
  NDArray y;
  if (w.spatial == 3) {  // Note [Volumes as slices of depth]
    y = from_planes(max_pool_planes(c, as_planes(x), w), x.shape());
    y = max_over_depth(pad_depth(c, y, w, -std::numeric_limits<double>::infinity()), taps(w));
  } else {
    y = from_2d(max_pool_planes(c, as_2d(x, w), w), w);
  }
  c.outputs.push_back(is_floating(dtype) ? y : y.to_type(dtype));
  if (c.node.output_wanted(1)) {
    const Shape out = as_2d(y, w).shape();
    c.outputs.push_back(from_2d(max_positions(c, as_2d(c.in(0), w), w, out), w));
  }
}

// The average over the windows of the last two axes of x [N, C, H, W].
NDArray average_pool_planes(const RunContext& c, NDArray x, Window w) {
  // The real elements of the input, for count_include_pad 0's divisor.
  NDArray ones = c.manager.ones(Shape{1, 1, x.shape()[2], x.shape()[3]}, x.dtype());
  if (w.explicit_padding(true)) {  // zeros, and the divisor counts them only with count_include_pad
    x = pad_image(c, x, w, 0.0);
    ones = pad_image(c, ones, w, 0.0);
    w.padding = {0, 0};
  }
  const bool ceil = c.node.i("ceil_mode", 0) != 0;
  if (ceil) {
    x = ceil_padded(c, x, w, 0.0);
    ones = ceil_padded(c, ones, w, 0.0);
  }
  NDArray y = avg_pool2d(x, w.kernel, w.stride, w.padding);
  const bool padded = w.begin[0] + w.begin[1] + w.end[0] + w.end[1] > 0;
  if (ceil || (padded && c.node.i("count_include_pad", 0) == 0)) {
    // avg_pool2d divides by the whole window; dividing by the pool of ones
    // makes the divisor the count of real elements.
    y = y.div(avg_pool2d(ones, w.kernel, w.stride, w.padding));
  }
  return y;
}

// The average over depth's windows of the planes' averages y [N, C, D, H', W']:
// the box's average, as a box's count is depth's count times the plane's.
NDArray average_over_depth(const RunContext& c, const NDArray& y, const Window& w) {
  const NDArray sums = sum_over_depth(pad_depth(c, y, w, 0.0), taps(w));
  const bool padded = w.depth.begin + w.depth.end > 0;
  if (c.node.i("ceil_mode", 0) == 0 && !(padded && c.node.i("count_include_pad", 0) == 0))
    return sums.div(double(w.depth.kernel));
  const NDArray ones = c.manager.ones(Shape{1, 1, y.shape()[2], 1, 1}, y.dtype());
  return sums.div(sum_over_depth(pad_depth(c, ones, w, 0.0), taps(w)));
}

void run_average_pool(RunContext& c) {
  const Window w = run_window(c, c.node.ints("kernel_shape"));
  if (c.node.i("ceil_mode", 0) != 0)  // checked again here: SAME padding is known only now
    if (std::string why = average_ceil_problem(w); !why.empty())
      throw InvalidArgument(fmt::format("onnx: {}: {}", c.node.label(), why));
  const NDArray& x = c.in(0);
  if (w.spatial == 3) {  // Note [Volumes as slices of depth]
    const NDArray planes = from_planes(average_pool_planes(c, as_planes(x), w), x.shape());
    c.outputs.push_back(average_over_depth(c, planes, w));
    return;
  }
  c.outputs.push_back(from_2d(average_pool_planes(c, as_2d(x, w), w), w));
}

std::vector<int> spatial_axes(const NDArray& x) {
  std::vector<int> axes;
  for (int k = 2; k < x.rank(); ++k) axes.push_back(k);
  return axes;
}

// ---- normalisation, dropout, softmax -------------------------------------------------

// training_mode 1 (opset 14 on): normalise by the batch's statistics whatever
// forward's `training` says, and give the running statistics updated as
// ONNX's reference does (running · momentum + batch · (1 - momentum), the
// batch's biased variance) as outputs 1 and 2; the inputs stay as they are.
void run_batch_norm_training_mode(RunContext& c, double eps, double momentum) {
  const NDArray& x = c.in(0);
  std::vector<int> axes{0};
  for (int k = 2; k < x.rank(); ++k) axes.push_back(k);
  // batch_norm updates the running statistics it is given: here, copies.
  c.outputs.push_back(batch_norm(x, c.in(1), c.in(2), c.in(3).dup(), c.in(4).dup(), true,
                                 1.0 - momentum, eps));
  if (!c.node.output_wanted(1) && !c.node.output_wanted(2)) return;
  const NDArray mean = x.mean(axes);
  const NDArray centred = x.sub(x.mean(axes, true));
  const NDArray variance = centred.mul(centred).mean(axes);
  c.outputs.push_back(c.in(3).mul(momentum).add(mean.mul(1.0 - momentum)));
  c.outputs.push_back(c.in(4).mul(momentum).add(variance.mul(1.0 - momentum)));
}

void run_batch_norm(RunContext& c) {
  const double eps = c.node.f("epsilon", 1e-5f), momentum = c.node.f("momentum", 0.9f);
  if (c.node.i("training_mode", 0) != 0) return run_batch_norm_training_mode(c, eps, momentum);
  c.outputs.push_back(batch_norm(c.in(0), c.in(1), c.in(2), c.in(3), c.in(4), c.training, 1.0 - momentum, eps));
}

std::string batch_norm_check(const CheckContext& c) {
  if (c.opset < 9 && c.node.i("spatial", 1) == 0) return "spatial 0 is not supported";
  const bool statistics_wanted = c.node.output_wanted(1) || c.node.output_wanted(2);
  if (statistics_wanted && c.opset < 14)
    return "the outputs after Y before opset 14 (mean, var, saved_mean, saved_var) are not supported";
  if (statistics_wanted && c.node.i("training_mode", 0) == 0)
    return "outputs running_mean and running_var need training_mode 1";
  return floats_only(c);
}

void run_layer_norm(RunContext& c) {
  const NDArray& x = c.in(0);
  const int axis = axis_in(c.node.i("axis", -1), x.rank(), c.node);
  const Shape xs = x.shape();
  const Shape normalized = to_shape(std::vector<std::int64_t>(xs.begin() + axis, xs.end()));
  NDArray gamma = c.in(1).shape() == normalized ? c.in(1) : c.in(1).broadcast_to(normalized);
  NDArray beta = c.has(2) ? (c.in(2).shape() == normalized ? c.in(2) : c.in(2).broadcast_to(normalized))
                          : c.manager.zeros(normalized, x.dtype());
  const double eps = c.node.f("epsilon", 1e-5f);
  c.outputs.push_back(layer_norm(x, gamma, beta, eps));
  if (c.node.output_wanted(1) || c.node.output_wanted(2)) {  // the statistics, as ONNX's reference keeps them
    std::vector<int> axes;
    for (int k = axis; k < x.rank(); ++k) axes.push_back(k);
    NDArray mean = x.mean(axes, true);
    NDArray centred = x.sub(mean);
    c.outputs.push_back(mean);
    c.outputs.push_back(centred.mul(centred).mean(axes, true).add(eps).sqrt().rdiv(1.0));
  }
}

std::string layer_norm_check(const CheckContext& c) {
  if (c.node.i("stash_type", 1) != 1) return "stash_type other than 1 (float) is not supported";
  return floats_only(c);
}

// The mask output, where asked for, is all true when not training; a
// training pass cannot give it (dropout's mask is redrawn, not kept).
void run_dropout(RunContext& c) {
  double ratio = 0.5;
  if (c.opset < 12) ratio = c.node.f("ratio", 0.5f);
  else if (c.has(1)) ratio = c.scalar(1);
  c.outputs.push_back(dropout(c.in(0), ratio, c.training));
  if (c.node.output_wanted(1)) {
    if (c.training)
      throw InvalidArgument(fmt::format("onnx: {}: the mask output is not available when training", c.node.label()));
    c.outputs.push_back(c.manager.full(c.in(0).shape(), 1.0, DataType::boolean));
  }
}

std::string dropout_check(const CheckContext& c) {
  if (c.node.input_given(2))
    return "a training_mode input is not supported; forward's `training` sets the mode";
  return floats_only(c);
}

// Softmax before opset 13 acts on the input flattened to 2-D at `axis`.
template <NDArray (NDArray::*Op)(int, Site) const>
void run_softmax(RunContext& c) {
  const NDArray& x = c.in(0);
  if (c.opset >= 13) {
    c.outputs.push_back((x.*Op)(axis_in(c.node.i("axis", -1), x.rank(), c.node), Site::current()));
    return;
  }
  const int axis = axis_in(c.node.i("axis", 1), x.rank(), c.node);
  std::int64_t outer = 1;
  for (int k = 0; k < axis; ++k) outer *= x.shape()[k];
  NDArray flat = x.reshape(Shape{outer, -1});
  c.outputs.push_back((flat.*Op)(1, Site::current()).reshape(x.shape()));
}

}  // namespace

const Kernel& matmul_add_kernel() {
  static const Kernel kernel{[](RunContext& c) { c.outputs.push_back(linear(c.in(0), c.in(1), c.in(2))); }};
  return kernel;
}

void add_nn_kernels(KernelTable& t) {
  t.add("MatMul", {[](RunContext& c) { c.outputs.push_back(c.in(0).matmul(c.in(1))); }, floats_only});
  t.add("Gemm", {run_gemm, floats_only});
  t.add("Conv", {run_conv, conv_check});
  t.add("MaxPool", {run_max_pool, pool_check, 2});
  t.add("AveragePool", {run_average_pool, pool_check});
  t.add("GlobalAveragePool", {[](RunContext& c) { c.outputs.push_back(c.in(0).mean(spatial_axes(c.in(0)), true)); },
                              floats_only, 1, false, 1});
  t.add("GlobalMaxPool", {[](RunContext& c) { c.outputs.push_back(c.in(0).max(spatial_axes(c.in(0)), true)); },
                          floats_only, 1, false, 1});
  t.add("BatchNormalization", {run_batch_norm, batch_norm_check, 3, true});
  t.add("LayerNormalization", {run_layer_norm, layer_norm_check, 3});
  t.add("Dropout", {run_dropout, dropout_check, 2, true});
  t.add("Softmax", {run_softmax<&NDArray::softmax>, floats_only});
  t.add("LogSoftmax", {run_softmax<&NDArray::log_softmax>, floats_only});
}

}  // namespace ndgc::onnx::detail
