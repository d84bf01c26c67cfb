// See kernel_support.hpp.
#include "onnx/kernel_support.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/layers.hpp"
#include "ops/embedding.hpp"
#include "support/assert.hpp"

namespace ndgc::onnx::detail {

namespace {

// Elements of x along `axis` at `indices` (int64, already in [0, n)), on the host.
NDArray gather_on_host(const RunContext& c, const NDArray& x, const std::vector<std::int64_t>& indices,
                       const Shape& index_shape, int axis) {
  const std::vector<std::int64_t> data = read_ints(x.contiguous());
  std::int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis; ++k) outer *= x.shape()[k];
  for (int k = axis + 1; k < x.rank(); ++k) inner *= x.shape()[k];
  const std::int64_t n = x.shape()[axis];
  std::vector<std::int64_t> out;
  out.reserve(std::size_t(outer) * indices.size() * std::size_t(inner));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i : indices)
      for (std::int64_t e = 0; e < inner; ++e) out.push_back(data[std::size_t((o * n + i) * inner + e)]);
  const Shape xs = x.shape();
  std::vector<std::int64_t> dims(xs.begin(), xs.begin() + axis);
  dims.insert(dims.end(), index_shape.begin(), index_shape.end());
  dims.insert(dims.end(), xs.begin() + axis + 1, xs.end());
  NDArray result = make_ints(c, out, to_shape(dims));
  return x.dtype() == DataType::int64 ? result : result.to_type(x.dtype());
}

}  // namespace

NDArray gather_floating(const NDArray& x, NDArray indices, int axis) {
  const bool scalar_index = indices.rank() == 0;
  if (scalar_index) indices = indices.reshape(Shape{1});
  const int rank = x.rank();
  std::vector<int> perm{axis};
  std::vector<std::int64_t> others;
  for (int k = 0; k < rank; ++k)
    if (k != axis) perm.push_back(k), others.push_back(x.shape()[k]);
  const std::int64_t rest = std::accumulate(others.begin(), others.end(), std::int64_t{1}, std::multiplies<>());
  NDArray table = x.permute(perm).reshape(Shape{x.shape()[axis], rest});
  NDArray rows = ops::embedding_in_range(indices, table);  // checked by every caller: no wait for the device's check
  const Shape is = indices.shape();
  std::vector<std::int64_t> dims(is.begin(), is.end());
  dims.insert(dims.end(), others.begin(), others.end());
  rows = rows.reshape(to_shape(dims));
  const int r = indices.rank();
  std::vector<int> back;
  for (int k = 0; k < axis; ++k) back.push_back(r + k);
  for (int k = 0; k < r; ++k) back.push_back(k);
  for (int k = axis; k < rank - 1; ++k) back.push_back(r + k);
  NDArray out = rows.permute(back);
  return scalar_index ? out.squeeze({axis}) : out;
}

NDArray make_ints(const RunContext& c, const std::vector<std::int64_t>& values, const Shape& shape) {
  return c.manager.create<std::int64_t>(values, shape);
}

NDArray gather_along(const RunContext& c, const NDArray& x, const std::vector<std::int64_t>& at, const Shape& index_shape,
                     int axis) {
  NDGC_ASSERT(std::all_of(at.begin(), at.end(), [n = x.shape()[axis]](std::int64_t i) { return i >= 0 && i < n; }),
              "gather_along: an index outside the axis");
  if (!is_floating(x.dtype())) return gather_on_host(c, x, at, index_shape, axis);
  return gather_floating(x, make_ints(c, at, index_shape), axis);
}

NDArray pad_constant(const RunContext& c, NDArray x, int axis, std::int64_t before, std::int64_t after, double value) {
  if (before < 0 || after < 0) {
    NDIndex crop;
    for (int k = 0; k < axis; ++k) crop.add_all();
    crop.add_slice(std::max<std::int64_t>(-before, 0), x.shape()[axis] - std::max<std::int64_t>(-after, 0));
    x = x.get(crop);
  }
  NDList parts;
  Shape side = x.shape();
  if (before > 0) side[axis] = before, parts.push_back(c.manager.full(side, value, x.dtype()));
  parts.push_back(x);
  if (after > 0) side[axis] = after, parts.push_back(c.manager.full(side, value, x.dtype()));
  return parts.size() == 1 ? x : concat(parts, axis);
}

std::vector<double> read_doubles(const NDArray& array) {
  std::vector<double> out(static_cast<std::size_t>(array.size()));
  array.copy_to(out.data(), DataType::float64, out.size());
  return out;
}

std::vector<std::int64_t> read_ints(const NDArray& array) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(array.size()));
  array.copy_to(out.data(), DataType::int64, out.size());
  return out;
}

double read_scalar(const NDArray& array) {
  double value = 0;
  if (array.size() != 1)
    throw InvalidArgument(fmt::format("onnx: expected one element, got an array of shape {}", array.shape().to_string()));
  array.copy_to(&value, DataType::float64, 1);
  return value;
}

int axis_in(std::int64_t axis, int rank, const Node& node) {
  if (axis < -rank || axis >= rank)
    throw InvalidArgument(fmt::format("onnx: {}: axis {} is out of range for rank {}", node.label(), axis, rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Shape to_shape(std::span<const std::int64_t> dims) { return Shape(dims); }

std::string floats_only(const CheckContext& c) {
  if (!c.input_dtypes.empty() && c.input_dtypes[0] && !is_floating(*c.input_dtypes[0]))
    return fmt::format("its input is {}; ndgc runs {} on float32 and float64", to_string(*c.input_dtypes[0]),
                       c.node.op_type());
  return "";
}

std::string numeric_data(const CheckContext& c) {
  if (!c.input_dtypes.empty() && c.input_dtypes[0] == DataType::boolean)
    return fmt::format("its input is boolean; ndgc runs {} on numbers", c.node.op_type());
  return "";
}

std::string same_numeric(const CheckContext& c) {
  std::optional<DataType> first;
  for (std::size_t k = 0; k < c.input_dtypes.size(); ++k) {
    const auto& t = c.input_dtypes[k];
    if (!t) continue;
    if (*t == DataType::boolean) return fmt::format("input {} is boolean", k);
    if (first && *t != *first)
      return fmt::format("inputs have different dtypes ({} and {})", to_string(*first), to_string(*t));
    first = t;
  }
  return "";
}

std::optional<std::vector<std::int64_t>> constant_ints(const CheckContext& c, std::size_t k) {
  if (k >= c.constant_inputs.size() || !c.constant_inputs[k]) return std::nullopt;
  const auto& t = *c.constant_inputs[k];
  std::vector<std::int64_t> out;
  if (t.data_type() == ::onnx::TensorProto::INT64) {
    if (t.has_raw_data()) {
      out.resize(t.raw_data().size() / 8);
      std::memcpy(out.data(), t.raw_data().data(), out.size() * 8);
    } else {
      out.assign(t.int64_data().begin(), t.int64_data().end());
    }
    return out;
  }
  return std::nullopt;
}

}  // namespace ndgc::onnx::detail
