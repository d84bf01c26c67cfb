// Resize (opset 11 and later) and Upsample (before it) as ONNX's reference computes them, one axis at a
// time: each output position along an axis is a weighted sum of a few input
// positions (one for nearest, two for linear, four for cubic), so an axis is
// a few gathers along it times per-position weights, summed. The gathers and
// products are ndgc ops: a floating input has a gradient. Coordinates follow
// coordinate_transformation_mode; positions past the edge take the edge's
// value (or, with tf_crop_and_resize, extrapolation_value).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "onnx/kernel_support.hpp"

namespace ndgc::onnx::detail {
namespace {

struct Mode {
  std::string mode, coordinates, nearest;
  double cubic_a;
  bool exclude_outside;
  double extrapolation;
};

// The source coordinate of output position x (ONNX's reference; out_width may be fractional).
double source_x(const Mode& m, double x, double scale, std::int64_t in, double out_width, double roi_start,
                double roi_end) {
  const std::string& c = m.coordinates;
  if (c == "align_corners") return out_width == 1 ? 0.0 : x * double(in - 1) / (out_width - 1);
  if (c == "asymmetric") return x / scale;
  if (c == "tf_crop_and_resize") {
    const double span = (roi_end - roi_start) * double(in - 1);
    return (out_width == 1 ? span / 2 : x * span / (out_width - 1)) + roi_start * double(in - 1);
  }
  if (c == "pytorch_half_pixel") return out_width == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  if (c == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

std::vector<double> coefficients(const Mode& m, double ratio) {
  if (m.mode == "nearest") {
    if (ratio == 1.0) return {0, 1};
    if (m.nearest == "round_prefer_ceil") return {double(ratio < 0.5), double(ratio >= 0.5)};
    if (m.nearest == "floor") return {1, 0};
    if (m.nearest == "ceil") return {0, 1};
    return {double(ratio <= 0.5), double(ratio > 0.5)};  // round_prefer_floor
  }
  if (m.mode == "linear") return {1 - ratio, ratio};
  const double a = m.cubic_a, r = ratio, s = 1 - ratio;
  return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a, ((a + 2) * r - (a + 3)) * r * r + 1,
          ((a + 2) * s - (a + 3)) * s * s + 1, ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
}

// Per output position: the input positions (edge-clamped) and their weights;
// `outside` marks positions that take extrapolation_value.
struct AxisPlan {
  std::vector<std::vector<std::int64_t>> at;  // [tap][position]
  std::vector<std::vector<double>> weight;    // [tap][position]
  std::vector<bool> outside;
};

AxisPlan plan_axis(const Mode& m, std::int64_t in, std::int64_t out, double scale, double roi_start, double roi_end) {
  const double out_width = scale * double(in);
  const std::size_t taps = m.mode == "cubic" ? 4 : 2;
  AxisPlan p{std::vector<std::vector<std::int64_t>>(taps), std::vector<std::vector<double>>(taps), {}};
  for (std::int64_t i = 0; i < out; ++i) {
    const double x = source_x(m, double(i), scale, in, out_width, roi_start, roi_end);
    p.outside.push_back(m.coordinates == "tf_crop_and_resize" && (x < 0 || x > double(in - 1)));
    const double base = std::floor(x);
    const double ratio = x == base ? 1.0 : x - base;
    std::vector<double> w = coefficients(m, ratio);
    // The taps: the `taps` positions nearest x, as the reference picks them (ties to the left).
    const std::int64_t first = ratio == 1.0 ? std::int64_t(base) - std::int64_t(taps) / 2
                                            : std::int64_t(base) - std::int64_t(taps) / 2 + 1;
    double kept = 0;
    for (std::size_t t = 0; t < taps; ++t) {
      const std::int64_t idx = first + std::int64_t(t);
      if (m.exclude_outside && (idx < 0 || idx >= in)) w[t] = 0;
      kept += w[t];
    }
    for (std::size_t t = 0; t < taps; ++t) {
      p.at[t].push_back(std::clamp<std::int64_t>(first + std::int64_t(t), 0, in - 1));
      p.weight[t].push_back(m.exclude_outside && kept != 0 ? w[t] / kept : w[t]);
    }
  }
  return p;
}

NDArray resize_axis(const RunContext& c, const NDArray& x, int axis, const AxisPlan& p, double extrapolation) {
  const auto out = std::int64_t(p.outside.size());
  Shape along(std::vector<std::int64_t>(std::size_t(x.rank()), 1));
  along[axis] = out;
  NDArray y;
  for (std::size_t t = 0; t < p.at.size(); ++t) {
    bool zero = true;
    for (double w : p.weight[t]) zero = zero && w == 0;
    if (zero) continue;
    NDArray part = gather_along(c, x, p.at[t], Shape{out}, axis);
    bool ones = true;
    for (double w : p.weight[t]) ones = ones && w == 1;
    if (!ones) part = part.mul(c.manager.create<double>(p.weight[t], along).to_type(x.dtype()));
    y = y.defined() ? y.add(part) : part;
  }
  if (!y.defined()) y = gather_along(c, x, p.at[0], Shape{out}, axis).mul(0.0);
  bool any_outside = false;
  for (bool o : p.outside) any_outside = any_outside || o;
  if (any_outside) {
    std::vector<std::uint8_t> mask(p.outside.begin(), p.outside.end());
    NDArray m = c.manager.create_raw(mask.data(), DataType::boolean, mask.size(), along);
    y = where(m, c.manager.full(Shape{}, extrapolation, x.dtype()), y);
  }
  return y;
}

// ⌊length · scale⌋; InvalidArgument when no array could be that long (the
// cast of a larger double to int64 would be undefined).
std::int64_t scaled_length(const RunContext& c, std::int64_t length, double scale) {
  const double scaled = std::floor(double(length) * scale);
  if (!(scaled <= double(std::int64_t(1) << 48)))
    throw InvalidArgument(fmt::format("onnx: {}: scale {} makes an axis of {} elements", c.node.label(), scale, scaled));
  return std::int64_t(scaled);
}

// x resized to `sizes` by `scales` along each axis that changes.
NDArray resize_axes(const RunContext& c, const NDArray& x, const Mode& m, const std::vector<double>& scales,
                    const std::vector<std::int64_t>& sizes, const std::vector<double>& roi) {
  const int rank = x.rank();
  NDArray y = x;
  for (int k = 0; k < rank; ++k) {
    const std::int64_t in = x.shape()[k];
    if (sizes[std::size_t(k)] == in && scales[std::size_t(k)] == 1.0 && m.coordinates != "tf_crop_and_resize") continue;
    const AxisPlan p = plan_axis(m, in, sizes[std::size_t(k)], scales[std::size_t(k)], roi[std::size_t(k)],
                                 roi[std::size_t(k + rank)]);
    y = resize_axis(c, y, k, p, m.extrapolation);
  }
  return y;
}

void run_resize(RunContext& c) {
  const NDArray& x = c.in(0);
  const int rank = x.rank();
  const Mode m{c.node.s("mode", "nearest"), c.node.s("coordinate_transformation_mode", "half_pixel"),
               c.node.s("nearest_mode", "round_prefer_floor"), c.node.f("cubic_coeff_a", -0.75f),
               c.node.i("exclude_outside", 0) != 0, c.node.f("extrapolation_value", 0.0f)};
  std::vector<double> scales(std::size_t(rank), 1.0);
  const Shape xs = x.shape();
  std::vector<std::int64_t> sizes(xs.begin(), xs.end());
  const bool by_sizes = c.has(3) && c.in(3).size() > 0;
  if (by_sizes) {
    sizes = c.ints(3);
    if (int(sizes.size()) != rank)
      throw InvalidArgument(fmt::format("onnx: {}: {} sizes for rank {}", c.node.label(), sizes.size(), rank));
    for (int k = 0; k < rank; ++k) scales[std::size_t(k)] = double(sizes[std::size_t(k)]) / double(x.shape()[k]);
  } else {
    if (!c.has(2) || c.in(2).size() != rank)
      throw InvalidArgument(fmt::format("onnx: {}: needs {} scales or sizes", c.node.label(), rank));
    const std::vector<double> s = c.doubles(2);
    for (int k = 0; k < rank; ++k) {
      if (!(s[std::size_t(k)] > 0)) throw InvalidArgument(fmt::format("onnx: {}: scale {} is not positive", c.node.label(), s[std::size_t(k)]));
      scales[std::size_t(k)] = s[std::size_t(k)];
      sizes[std::size_t(k)] = scaled_length(c, x.shape()[k], s[std::size_t(k)]);
    }
  }
  std::vector<double> roi(std::size_t(2 * rank), 0.0);
  if (m.coordinates == "tf_crop_and_resize" && c.has(1) && c.in(1).size() == 2 * rank)
    c.in(1).copy_to(roi.data(), DataType::float64, roi.size());
  c.outputs.push_back(resize_axes(c, x, m, scales, sizes, roi));
}

// Upsample (opsets 7 and 9; Resize replaced it in 10): nearest, output[i] =
// input[floor(i / scale)] along each axis, which is Resize's asymmetric
// coordinates with nearest_mode floor. Its scales are an attribute (opset 7)
// or input 1 (opset 9).
void run_upsample(RunContext& c) {
  const NDArray& x = c.in(0);
  const int rank = x.rank();
  std::vector<double> scales(std::size_t(rank), 1.0);
  if (c.opset < 9) {
    const std::vector<float> s = c.node.floats("scales");
    if (int(s.size()) != rank)
      throw InvalidArgument(fmt::format("onnx: {}: {} scales for rank {}", c.node.label(), s.size(), rank));
    std::copy(s.begin(), s.end(), scales.begin());
  } else {
    if (!c.has(1) || c.in(1).size() != rank)
      throw InvalidArgument(fmt::format("onnx: {}: needs {} scales", c.node.label(), rank));
    scales = c.doubles(1);
  }
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(rank));
  for (int k = 0; k < rank; ++k) {
    if (!(scales[std::size_t(k)] >= 1))
      throw InvalidArgument(fmt::format("onnx: {}: scale {} is below 1", c.node.label(), scales[std::size_t(k)]));
    sizes[std::size_t(k)] = scaled_length(c, x.shape()[k], scales[std::size_t(k)]);
  }
  const Mode m{"nearest", "asymmetric", "floor", -0.75, false, 0.0};
  c.outputs.push_back(resize_axes(c, x, m, scales, sizes, std::vector<double>(std::size_t(2 * rank), 0.0)));
}

std::string upsample_check(const CheckContext& c) {
  const std::string mode = c.node.s("mode", "nearest");
  if (mode != "nearest") return fmt::format("Upsample mode '{}' is not supported; ndgc runs 'nearest'", mode);
  return "";
}

std::string resize_check(const CheckContext& c) {
  if (c.opset < 11) return "Resize before opset 11 is not supported";
  const std::string mode = c.node.s("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") return fmt::format("mode '{}' is not an ONNX value", mode);
  if (mode != "nearest" && !c.input_dtypes.empty() && c.input_dtypes[0] && !is_floating(*c.input_dtypes[0]))
    return fmt::format("{} resizing of {} is not supported", mode, to_string(*c.input_dtypes[0]));
  const std::string coordinates = c.node.s("coordinate_transformation_mode", "half_pixel");
  for (const char* known : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                            "tf_crop_and_resize"})
    if (coordinates == known) return "";
  return fmt::format("coordinate_transformation_mode '{}' is not an ONNX value", coordinates);
}

}  // namespace

void add_resize_kernels(KernelTable& t) {
  t.add("Resize", {run_resize, resize_check});
  t.add("Upsample", {run_upsample, upsample_check, 1, false, 7});
}

}  // namespace ndgc::onnx::detail
