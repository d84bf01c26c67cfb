// Shape and layout kernels: Reshape, Flatten, Transpose, Squeeze, Unsqueeze,
// Concat, Split, Slice, Gather, Expand, Tile, and the ops that make shapes
// and constants (Shape, Size, Constant, ConstantOfShape, Range).
//
// Views where ndgc has them (reshape, transpose, slices with positive steps,
// broadcast_to); Gather of floating data is an embedding lookup along the
// axis, so it has embedding's gradient and device kernels. Integer data
// (shape arithmetic) is gathered on the host: Note [Shape arithmetic on the
// host] in kernel_support.hpp.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/layers.hpp"
#include "onnx/kernel_support.hpp"
#include "onnx/tensors.hpp"

namespace ndgc::onnx::detail {
namespace {

// ---- reshaping ------------------------------------------------------------------

void run_reshape(RunContext& c) {
  const NDArray& x = c.in(0);
  std::vector<std::int64_t> dims = c.opset < 5 ? c.node.ints("shape") : c.ints(1);
  const bool allow_zero = c.node.i("allowzero", 0) != 0;
  for (std::size_t k = 0; k < dims.size(); ++k)
    if (dims[k] == 0 && !allow_zero) {
      if (int(k) >= x.rank())
        throw InvalidArgument(fmt::format("onnx: {}: shape entry {} is 0 but the input has rank {}",
                                          c.node.label(), k, x.rank()));
      dims[k] = x.shape()[int(k)];
    }
  c.outputs.push_back(x.reshape(to_shape(dims)));
}

void run_flatten(RunContext& c) {
  const NDArray& x = c.in(0);
  const int rank = x.rank();
  const std::int64_t a = c.node.i("axis", 1);
  const int axis = a == rank ? rank : axis_in(a, rank, c.node);
  std::int64_t outer = 1;
  for (int k = 0; k < axis; ++k) outer *= x.shape()[k];
  std::int64_t inner = 1;
  for (int k = axis; k < rank; ++k) inner *= x.shape()[k];
  c.outputs.push_back(x.reshape(Shape{outer, inner}));
}

void run_transpose(RunContext& c) {
  const NDArray& x = c.in(0);
  std::vector<std::int64_t> perm = c.node.ints("perm");
  if (perm.empty()) {
    c.outputs.push_back(x.transpose());
    return;
  }
  std::vector<int> axes;
  for (std::int64_t p : perm) axes.push_back(axis_in(p, x.rank(), c.node));
  c.outputs.push_back(x.transpose(axes));
}

// Squeeze's and Unsqueeze's axes: an attribute before opset 13, an input after.
std::vector<std::int64_t> axes_argument(const RunContext& c, bool& given) {
  if (c.opset < 13) {
    given = c.node.has("axes");
    return c.node.ints("axes");
  }
  given = c.has(1);
  return given ? c.ints(1) : std::vector<std::int64_t>{};
}

void run_squeeze(RunContext& c) {
  const NDArray& x = c.in(0);
  bool given = false;
  std::vector<std::int64_t> axes = axes_argument(c, given);
  if (!given) {
    c.outputs.push_back(x.squeeze());
    return;
  }
  std::vector<bool> drop(std::size_t(x.rank()), false);
  for (std::int64_t a : axes) {
    const int axis = axis_in(a, x.rank(), c.node);
    if (x.shape()[axis] != 1)
      throw ShapeMismatch(fmt::format("onnx: {}: axis {} of {} has length {}, not 1", c.node.label(), axis,
                                      x.shape().to_string(), x.shape()[axis]));
    drop[std::size_t(axis)] = true;
  }
  std::vector<std::int64_t> dims;
  for (int k = 0; k < x.rank(); ++k)
    if (!drop[std::size_t(k)]) dims.push_back(x.shape()[k]);
  c.outputs.push_back(x.reshape(to_shape(dims)));
}

void run_unsqueeze(RunContext& c) {
  const NDArray& x = c.in(0);
  bool given = false;
  const std::vector<std::int64_t> axes = axes_argument(c, given);
  const int rank = x.rank() + int(axes.size());
  std::vector<bool> inserted(std::size_t(rank), false);
  for (std::int64_t a : axes) {
    const int axis = axis_in(a, rank, c.node);
    if (inserted[std::size_t(axis)])
      throw InvalidArgument(fmt::format("onnx: {}: axis {} is given twice", c.node.label(), axis));
    inserted[std::size_t(axis)] = true;
  }
  std::vector<std::int64_t> dims;
  int from = 0;
  for (int k = 0; k < rank; ++k) dims.push_back(inserted[std::size_t(k)] ? 1 : x.shape()[from++]);
  c.outputs.push_back(x.reshape(to_shape(dims)));
}

// ---- gathering and slicing -------------------------------------------------------

void run_gather(RunContext& c) {
  const NDArray& x = c.in(0);
  const int axis = axis_in(c.node.i("axis", 0), x.rank(), c.node);
  const std::int64_t n = x.shape()[axis];
  std::vector<std::int64_t> indices = c.ints(1);
  bool negative = false;
  for (std::int64_t& i : indices) {
    if (i < -n || i >= n)
      throw InvalidArgument(fmt::format("onnx: {}: index {} is out of range for axis {} of length {}", c.node.label(),
                                        i, axis, n));
    if (i < 0) i += n, negative = true;
  }
  // Indices already in range are looked up as they are: on a GPU, a
  // constant's device copy, with nothing copied from the host.
  if (!negative && is_floating(x.dtype())) return c.outputs.push_back(gather_floating(x, c.in(1), axis));
  c.outputs.push_back(gather_along(c, x, indices, c.in(1).shape(), axis));
}

// One axis of a Slice: [start, stop) by step, clamped as ONNX says.
struct Range1 {
  std::int64_t start, stop, step;
};

Range1 clamp_range(std::int64_t start, std::int64_t stop, std::int64_t step, std::int64_t n) {
  auto clamp = [](std::int64_t v, std::int64_t lo, std::int64_t hi) { return std::min(std::max(v, lo), hi); };
  if (start < 0) start = start < -n ? -n - 1 + (step > 0 ? 1 : 0) : start + n;
  if (stop < 0) stop = stop < -n ? -1 : stop + n;
  if (step > 0) return {clamp(start, 0, n), clamp(stop, 0, n), step};
  return {clamp(start, -1, n - 1), clamp(stop, -1, n - 1), step};
}

void run_slice(RunContext& c) {
  const NDArray& x = c.in(0);
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = c.node.ints("starts"), ends = c.node.ints("ends"), axes = c.node.ints("axes");
  } else {
    starts = c.ints(1), ends = c.ints(2);
    if (c.has(3)) axes = c.ints(3);
    if (c.has(4)) steps = c.ints(4);
  }
  if (axes.empty())
    for (std::size_t k = 0; k < starts.size(); ++k) axes.push_back(std::int64_t(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw InvalidArgument(fmt::format("onnx: {}: starts, ends, axes and steps have different lengths", c.node.label()));
  std::vector<Range1> ranges;
  for (int k = 0; k < x.rank(); ++k) ranges.push_back({0, x.shape()[k], 1});
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const int axis = axis_in(axes[k], x.rank(), c.node);
    if (steps[k] == 0) throw InvalidArgument(fmt::format("onnx: {}: a step is 0", c.node.label()));
    ranges[std::size_t(axis)] = clamp_range(starts[k], ends[k], steps[k], x.shape()[axis]);
  }
  NDArray y = x;
  NDIndex index;
  bool reversed = false;
  for (const Range1& r : ranges) {
    if (r.step > 0) index.add_slice(r.start, std::max(r.start, r.stop), r.step);
    else index.add_all(), reversed = true;
  }
  y = y.get(index);
  if (reversed)  // negative steps: gather the positions in order along each such axis
    for (int k = 0; k < x.rank(); ++k) {
      const Range1& r = ranges[std::size_t(k)];
      if (r.step > 0) continue;
      std::vector<std::int64_t> at;
      for (std::int64_t i = r.start; i > r.stop; i += r.step) at.push_back(i);
      y = gather_along(c, y, at, Shape{std::int64_t(at.size())}, k);
    }
  c.outputs.push_back(y);
}

void run_split(RunContext& c) {
  const NDArray& x = c.in(0);
  const int axis = axis_in(c.node.i("axis", 0), x.rank(), c.node);
  const std::int64_t n = x.shape()[axis];
  std::vector<std::int64_t> sizes = c.opset < 13 ? c.node.ints("split") : (c.has(1) ? c.ints(1) : std::vector<std::int64_t>{});
  const auto parts = std::int64_t(c.node.output_count());
  if (sizes.empty()) {
    if (n % parts != 0)
      throw ShapeMismatch(fmt::format("onnx: {}: axis {} of length {} does not split into {} equal parts",
                                      c.node.label(), axis, n, parts));
    sizes.assign(std::size_t(parts), n / parts);
  }
  if (std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0}) != n || std::int64_t(sizes.size()) != parts)
    throw ShapeMismatch(fmt::format("onnx: {}: split sizes {} do not cover axis {} of length {} in {} parts",
                                    c.node.label(), fmt::join(sizes, ","), axis, n, parts));
  std::int64_t at = 0;
  for (std::int64_t size : sizes) {
    NDIndex index;
    for (int k = 0; k < axis; ++k) index.add_all();
    index.add_slice(at, at + size);
    c.outputs.push_back(x.get(index));
    at += size;
  }
}

// ---- broadcasting and repeating --------------------------------------------------

void run_expand(RunContext& c) {
  const NDArray& x = c.in(0);
  const std::vector<std::int64_t> want = c.ints(1);
  const int rank = std::max<int>(x.rank(), int(want.size()));
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank));
  for (int k = 0; k < rank; ++k) {
    const int xi = k - (rank - x.rank()), wi = k - (rank - int(want.size()));
    const std::int64_t a = xi >= 0 ? x.shape()[xi] : 1, b = wi >= 0 ? want[std::size_t(wi)] : 1;
    if (a != b && a != 1 && b != 1)
      throw ShapeMismatch(fmt::format("onnx: {}: cannot broadcast {} to [{}]", c.node.label(), x.shape().to_string(),
                                      fmt::join(want, ", ")));
    dims[std::size_t(k)] = a == 1 ? b : a;
  }
  c.outputs.push_back(x.broadcast_to(to_shape(dims)));
}

void run_tile(RunContext& c) {
  NDArray y = c.in(0);
  const std::vector<std::int64_t> repeats = c.ints(1);
  if (int(repeats.size()) != y.rank())
    throw InvalidArgument(fmt::format("onnx: {}: {} repeats for rank {}", c.node.label(), repeats.size(), y.rank()));
  for (int k = 0; k < y.rank(); ++k) {
    if (repeats[std::size_t(k)] < 0) throw InvalidArgument(fmt::format("onnx: {}: a negative repeat", c.node.label()));
    if (repeats[std::size_t(k)] == 1) continue;
    NDList copies;
    for (std::int64_t r = 0; r < repeats[std::size_t(k)]; ++r) copies.push_back(y);
    y = concat(copies, k);
  }
  c.outputs.push_back(y);
}

void run_concat(RunContext& c) {
  NDList parts;
  for (std::size_t k = 0; k < c.inputs.size(); ++k) parts.push_back(c.in(k));
  const int axis = axis_in(c.node.i("axis", 0), c.in(0).rank(), c.node);
  c.outputs.push_back(parts.size() == 1 ? parts[0] : concat(parts, axis));
}

// ---- shapes and constants ---------------------------------------------------------

void run_shape(RunContext& c) {
  const Shape s = c.in(0).shape();
  const std::int64_t rank = s.rank();
  auto clamp = [&](std::int64_t v) { return std::clamp(v < 0 ? v + rank : v, std::int64_t{0}, rank); };
  const std::int64_t start = clamp(c.node.i("start", 0)), end = clamp(c.node.i("end", rank));
  std::vector<std::int64_t> dims;
  for (std::int64_t k = start; k < end; ++k) dims.push_back(s[int(k)]);
  c.outputs.push_back(make_ints(c, dims, Shape{std::int64_t(dims.size())}));
}

void run_constant(RunContext& c) {
  const Node& n = c.node;
  if (const auto* t = n.t("value")) c.outputs.push_back(to_array(*t, c.manager, n.label()));
  else if (n.has("value_float")) c.outputs.push_back(c.manager.create_scalar<float>(n.f("value_float", 0)));
  else if (n.has("value_int")) c.outputs.push_back(c.manager.create_scalar<std::int64_t>(n.i("value_int", 0)));
  else if (n.has("value_floats")) {
    const std::vector<float> v = n.floats("value_floats");
    c.outputs.push_back(c.manager.create<float>(v));
  } else {
    const std::vector<std::int64_t> v = n.ints("value_ints");
    c.outputs.push_back(c.manager.create<std::int64_t>(v));
  }
}

std::string constant_check(const CheckContext& c) {
  for (const char* a : {"sparse_value", "value_string", "value_strings"})
    if (c.node.has(a)) return fmt::format("attribute '{}' is not supported", a);
  if (const auto* t = c.node.t("value"); t && !dtype_of_elem(t->data_type()))
    return fmt::format("its value is {}", elem_name(t->data_type()));
  return "";
}

void run_constant_of_shape(RunContext& c) {
  const std::vector<std::int64_t> dims = c.ints(0);
  DataType dtype = DataType::float32;
  double value = 0;
  if (const auto* t = c.node.t("value")) {  // read on the host, where the attribute is
    NDManager host = ManagerRef(c.manager).new_sub_manager(Device::cpu());
    NDArray v = to_array(*t, host, c.node.label());
    dtype = v.dtype(), value = read_scalar(v);
  }
  c.outputs.push_back(c.manager.full(to_shape(dims), value, dtype));
}

std::string constant_of_shape_check(const CheckContext& c) {
  if (const auto* t = c.node.t("value"); t && !dtype_of_elem(t->data_type()))
    return fmt::format("its value is {}", elem_name(t->data_type()));
  return "";
}

void run_range(RunContext& c) {
  const double start = c.scalar(0), limit = c.scalar(1), delta = c.scalar(2);
  if (delta == 0) throw InvalidArgument(fmt::format("onnx: {}: delta is 0", c.node.label()));
  const auto count = std::int64_t(std::max(0.0, std::ceil((limit - start) / delta)));
  std::vector<double> values(static_cast<std::size_t>(count));
  for (std::int64_t k = 0; k < count; ++k) values[std::size_t(k)] = start + double(k) * delta;
  NDArray r = c.manager.create<double>(values, Shape{count});
  c.outputs.push_back(c.in(0).dtype() == DataType::float64 ? r : r.to_type(c.in(0).dtype()));
}

// ---- triangles and padding ----------------------------------------------------------

// x where the last two axes' position (i, j) has j - i >= k (upper) or <= k, else 0.
void run_trilu(RunContext& c) {
  const NDArray& x = c.in(0);
  if (x.rank() < 2) throw InvalidArgument(fmt::format("onnx: {}: the input has rank {}", c.node.label(), x.rank()));
  const std::int64_t k = c.has(1) ? c.ints(1).at(0) : 0;
  const bool upper = c.node.i("upper", 1) != 0;
  const std::int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
  std::vector<std::uint8_t> keep(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) keep[std::size_t(i * cols + j)] = upper ? j - i >= k : j - i <= k;
  NDArray mask = c.manager.create_raw(keep.data(), DataType::boolean, keep.size(), Shape{rows, cols});
  c.outputs.push_back(where(mask, x, c.manager.zeros(Shape{}, x.dtype())));
}

// The source position of padded position p (in [-before, n + after)) on an
// axis of length n, for edge and reflect padding.
std::int64_t padded_source(std::int64_t p, std::int64_t n, bool reflect) {
  if (!reflect) return std::clamp<std::int64_t>(p, 0, n - 1);
  if (p < 0) return -p;
  return p >= n ? 2 * (n - 1) - p : p;
}

NDArray pad_axis(const RunContext& c, const NDArray& x, int axis, std::int64_t before, std::int64_t after,
                 const std::string& mode, double value) {
  const std::int64_t n = x.shape()[axis];
  if (mode == "constant") return pad_constant(c, x, axis, before, after, value);
  const bool reflect = mode == "reflect";
  if (n == 0 || (reflect && (before >= n || after >= n)))
    throw InvalidArgument(fmt::format("onnx: {}: {} padding of ({}, {}) on axis {} of length {}", c.node.label(), mode,
                                      before, after, axis, n));
  std::vector<std::int64_t> at;
  for (std::int64_t p = -before; p < n + after; ++p) at.push_back(padded_source(p, n, reflect));
  return gather_along(c, x, at, Shape{std::int64_t(at.size())}, axis);
}

void run_pad(RunContext& c) {
  NDArray y = c.in(0);
  const std::vector<std::int64_t> pads = c.opset < 11 ? c.node.ints("pads") : c.ints(1);
  const double value = c.opset < 11 ? c.node.f("value", 0.0f) : (c.has(2) ? c.scalar(2) : 0.0);
  const std::string mode = c.node.s("mode", "constant");
  const int rank = y.rank();
  if (int(pads.size()) != 2 * rank)
    throw InvalidArgument(fmt::format("onnx: {}: {} pads for rank {}", c.node.label(), pads.size(), rank));
  for (int k = 0; k < rank; ++k)  // negative pads crop first
    y = pad_constant(c, y, k, std::min<std::int64_t>(pads[std::size_t(k)], 0),
                     std::min<std::int64_t>(pads[std::size_t(k + rank)], 0), 0.0);
  for (int k = 0; k < rank; ++k) {
    const std::int64_t b = std::max<std::int64_t>(pads[std::size_t(k)], 0);
    const std::int64_t e = std::max<std::int64_t>(pads[std::size_t(k + rank)], 0);
    if (b > 0 || e > 0) y = pad_axis(c, y, k, b, e, mode, value);
  }
  c.outputs.push_back(y);
}

std::string pad_check(const CheckContext& c) {
  const std::string mode = c.node.s("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") return fmt::format("mode '{}' is not supported", mode);
  if (c.node.input_given(3)) return "the axes input (opset 18) is not supported";
  return "";
}

}  // namespace

void add_shape_kernels(KernelTable& t) {
  t.add("Reshape", {run_reshape});
  t.add("Flatten", {run_flatten});
  t.add("Transpose", {run_transpose});
  t.add("Squeeze", {run_squeeze});
  t.add("Unsqueeze", {run_unsqueeze});
  t.add("Gather", {run_gather});
  t.add("Slice", {run_slice});
  t.add("Split", {run_split, nullptr, 64});
  t.add("Expand", {run_expand});
  t.add("Tile", {run_tile});
  t.add("Concat", {run_concat});
  t.add("Identity", {[](RunContext& c) { c.outputs.push_back(c.in(0)); }});
  t.add("Shape", {.run = run_shape, .reads_shape_only = true});
  t.add("Size", {.run = [](RunContext& c) { c.outputs.push_back(c.manager.create_scalar<std::int64_t>(c.in(0).size())); },
                 .reads_shape_only = true});
  t.add("Constant", {run_constant, constant_check});
  t.add("ConstantOfShape", {run_constant_of_shape, constant_of_shape_check});
  t.add("Range", {run_range});
  t.add("Trilu", {run_trilu});
  t.add("Pad", {run_pad, pad_check});
}

}  // namespace ndgc::onnx::detail
