// The scatters: ScatterElements, Scatter (its opset 9-10 name), ScatterND,
// and MaxUnpool (which runs as a gather: see run_max_unpool).
// Where each update goes is found on the host. Floating data is then
// composed of ndgc ops, so data and updates keep their gradients:
//   - the updates are spread by a one-hot product: for ScatterElements one-hot
//     over the scattered axis (as GatherElements gathers, memory of updates ×
//     axis length), for ScatterND over the addressed rows (updates × rows),
//     then summed to the output's positions;
//   - the count of updates at each position is the same product of ones;
//   - reduction "none" takes the update where one arrived and the data
//     elsewhere, "add" adds them;
//   - "mul" multiplies the data by every update that reaches a position: the
//     updates are dealt into layers, the k-th update of each position into
//     layer k, so that a layer reaches a position at most once; each layer
//     is spread as above and multiplies where it arrived.
// Integer data is scattered on the host. Opset 18's "max" and "min" are
// refused at load (ndgc runs opsets up to 17). Under "none" two updates for one
// position have no defined result (ONNX leaves the order open), so that is
// an InvalidArgument at forward rather than a silent choice.
#include <algorithm>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "onnx/kernel_support.hpp"
#include "onnx/tensors.hpp"

namespace ndgc::onnx::detail {
namespace {

bool adds(const RunContext& c) { return c.node.s("reduction", "none") == "add"; }
bool multiplies(const RunContext& c) { return c.node.s("reduction", "none") == "mul"; }

// InvalidArgument when two updates under "none" go to one position.
void check_distinct(const RunContext& c, std::vector<std::int64_t> positions) {
  if (adds(c) || multiplies(c)) return;
  std::sort(positions.begin(), positions.end());
  const auto twice = std::adjacent_find(positions.begin(), positions.end());
  if (twice != positions.end())
    throw InvalidArgument(fmt::format("onnx: {}: two updates for position {} with reduction 'none', whose result "
                                      "ONNX leaves undefined; use reduction 'add' or distinct indices",
                                      c.node.label(), *twice));
}

// Host scatter of integer data: out[dest[u]] = (or +=) updates[u], over flat positions.
NDArray scatter_on_host(const RunContext& c, const NDArray& data, const std::vector<std::int64_t>& dest,
                        const NDArray& updates, std::int64_t row) {
  std::vector<std::int64_t> out = read_ints(data.contiguous()), upd = read_ints(updates.contiguous());
  for (std::size_t u = 0; u < dest.size(); ++u)
    for (std::int64_t e = 0; e < row; ++e) {
      std::int64_t& to = out[std::size_t(dest[u] * row + e)];
      const std::int64_t v = upd[u * std::size_t(row) + std::size_t(e)];
      to = adds(c) ? to + v : multiplies(c) ? to * v : v;
    }
  NDArray r = make_ints(c, out, data.shape());
  return data.dtype() == DataType::int64 ? r : r.to_type(data.dtype());
}

// The combination of data and the spread updates, given the count of updates per position.
NDArray combine(const RunContext& c, const NDArray& data, const NDArray& spread, const NDArray& count) {
  return adds(c) ? data.add(spread) : where(count.gt(0.0), spread, data);
}

// The updates that reach one position dealt into layers: the k-th update
// of each position into layer k, so that within a layer a position is
// reached at most once (its spread is then that update, not a sum).
struct Layers {
  std::vector<std::int64_t> layer;  // by update
  std::int64_t count = 0;
  explicit Layers(const std::vector<std::int64_t>& dest) : layer(dest.size()) {
    std::vector<std::int64_t> sorted = dest;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    std::vector<std::int64_t> seen(sorted.size(), 0);
    for (std::size_t u = 0; u < dest.size(); ++u) {
      const auto slot = std::size_t(std::lower_bound(sorted.begin(), sorted.end(), dest[u]) - sorted.begin());
      layer[u] = seen[slot]++;
      count = std::max(count, layer[u] + 1);
    }
  }
  std::vector<std::int64_t> mask(std::int64_t k) const {  // 1 for layer k's updates
    std::vector<std::int64_t> in_layer(layer.size());
    for (std::size_t u = 0; u < layer.size(); ++u) in_layer[u] = layer[u] == k ? 1 : 0;
    return in_layer;
  }
};

// ScatterElements along `axis`: updates[i...] goes to data[i... with i[axis] = indices[i...]].
void run_scatter_elements(RunContext& c) {
  const NDArray& data = c.in(0);
  const NDArray& updates = c.in(2);
  const int axis = axis_in(c.node.i("axis", 0), data.rank(), c.node);
  const Shape ds = data.shape(), is = c.in(1).shape();
  if (is != updates.shape() || is.rank() != ds.rank())
    throw ShapeMismatch(fmt::format("onnx: {}: indices {}, updates {} and data {} must share a rank, and indices "
                                    "the updates' shape", c.node.label(), is.to_string(), updates.shape().to_string(),
                                    ds.to_string()));
  for (int k = 0; k < ds.rank(); ++k)
    if (k != axis && is[k] > ds[k])
      throw ShapeMismatch(fmt::format("onnx: {}: indices {} exceed data {} on axis {}", c.node.label(), is.to_string(),
                                      ds.to_string(), k));
  const std::int64_t n = ds[axis];
  std::vector<std::int64_t> idx = c.ints(1), dest(idx.size());
  std::vector<std::int64_t> at(std::size_t(is.rank()), 0);
  for (std::size_t e = 0; e < idx.size(); ++e) {
    std::int64_t& i = idx[e];
    if (i < -n || i >= n)
      throw InvalidArgument(fmt::format("onnx: {}: index {} is out of range for axis {} of length {}", c.node.label(), i,
                                        axis, n));
    if (i < 0) i += n;
    std::int64_t flat = 0;
    for (int k = 0; k < is.rank(); ++k) flat = flat * ds[k] + (k == axis ? i : at[std::size_t(k)]);
    dest[e] = flat;
    for (int k = is.rank() - 1; k >= 0 && ++at[std::size_t(k)] == is[k]; --k) at[std::size_t(k)] = 0;
  }
  check_distinct(c, dest);
  if (!is_floating(data.dtype())) {
    c.outputs.push_back(scatter_on_host(c, data.reshape(Shape{data.size(), 1}), dest, updates, 1).reshape(ds));
    return;
  }
  const int last = ds.rank();  // the one-hot axis of length n, after is's axes
  const NDArray hot = make_ints(c, idx, is).one_hot(n, data.dtype());  // is + [n]
  // The updates `hot_k` marks, summed at their positions along `axis`, and
  // how many arrived at each: both shaped as data.
  auto spread_of = [&](const NDArray& hot_k) {
    NDArray spread = hot_k.mul(updates.expand_dims(last)).sum({axis});  // is without axis + [n]
    NDArray count = hot_k.sum({axis});
    std::vector<int> order;  // the [n] axis back to `axis`
    for (int k = 0; k < last - 1; ++k) order.push_back(k);
    order.insert(order.begin() + axis, last - 1);
    spread = spread.permute(order);
    count = count.permute(order);
    for (int k = 0; k < ds.rank(); ++k)  // indices may cover less than data on the other axes
      if (k != axis && is[k] < ds[k]) {
        spread = pad_constant(c, spread, k, 0, ds[k] - is[k], 0.0);
        count = pad_constant(c, count, k, 0, ds[k] - is[k], 0.0);
      }
    return std::pair{spread, count};
  };
  if (!multiplies(c)) {
    const auto [spread, count] = spread_of(hot);
    c.outputs.push_back(combine(c, data, spread, count));
    return;
  }
  // "mul": layer by layer, each reaching a position at most once (Layers).
  const Layers layers(dest);
  NDArray result = data;
  for (std::int64_t k = 0; k < layers.count; ++k) {
    const NDArray mask = make_ints(c, layers.mask(k), is).to_type(data.dtype()).expand_dims(last);
    const auto [spread, reached] = spread_of(hot.mul(mask));
    result = result.mul(where(reached.gt(0.0), spread, c.manager.ones(spread.shape(), spread.dtype())));
  }
  c.outputs.push_back(result);
}

// ScatterND's "mul" over rows: data [rows, row] times every update row that
// reaches it. hot [U, rows] is the updates' one-hot rows, dest their rows.
NDArray multiply_in_layers(const RunContext& c, NDArray data, const NDArray& hot, const NDArray& updates,
                           const std::vector<std::int64_t>& dest) {
  const Layers layers(dest);
  const auto count_u = std::int64_t(dest.size());
  for (std::int64_t k = 0; k < layers.count; ++k) {
    const NDArray mask = make_ints(c, layers.mask(k), Shape{count_u, 1}).to_type(hot.dtype());
    const NDArray hot_k = hot.mul(mask);                                          // this layer's updates only
    const NDArray spread = hot_k.transpose().matmul(updates);                     // [rows, row]
    const NDArray reached = hot_k.sum({0}).reshape(Shape{hot.shape()[1], 1});     // 1 where one arrived
    data = data.mul(where(reached.gt(0.0), spread, c.manager.ones(spread.shape(), spread.dtype())));
  }
  return data;
}

// ScatterND: the last axis of indices (length q) addresses a slice data[i0, ..., iq-1, ...].
void run_scatter_nd(RunContext& c) {
  const NDArray& data = c.in(0);
  const NDArray& updates = c.in(2);
  const Shape ds = data.shape(), is = c.in(1).shape(), us = updates.shape();
  const std::int64_t q = is.rank() > 0 ? is[is.rank() - 1] : 0;
  bool fits = is.rank() >= 1 && q >= 1 && q <= ds.rank() && us.rank() == is.rank() - 1 + ds.rank() - q;
  for (int k = 0; fits && k < is.rank() - 1; ++k) fits = us[k] == is[k];
  for (int k = int(q); fits && k < ds.rank(); ++k) fits = us[is.rank() - 1 + k - int(q)] == ds[k];
  if (!fits)
    throw ShapeMismatch(fmt::format("onnx: {}: indices {} and updates {} do not address data {}", c.node.label(),
                                    is.to_string(), us.to_string(), ds.to_string()));
  std::int64_t rows = 1, row = 1;
  for (int k = 0; k < int(q); ++k) rows *= ds[k];
  for (int k = int(q); k < ds.rank(); ++k) row *= ds[k];
  const std::vector<std::int64_t> idx = c.ints(1);
  std::vector<std::int64_t> dest(idx.size() / std::size_t(q));
  for (std::size_t u = 0; u < dest.size(); ++u) {
    std::int64_t flat = 0;
    for (std::int64_t j = 0; j < q; ++j) {
      const std::int64_t n = ds[int(j)], i = idx[u * std::size_t(q) + std::size_t(j)];
      if (i < -n || i >= n)
        throw InvalidArgument(fmt::format("onnx: {}: index {} is out of range for axis {} of length {}", c.node.label(),
                                          i, j, n));
      flat = flat * n + (i < 0 ? i + n : i);
    }
    dest[u] = flat;
  }
  check_distinct(c, dest);
  const auto count_u = std::int64_t(dest.size());
  if (!is_floating(data.dtype())) {
    c.outputs.push_back(scatter_on_host(c, data, dest, updates, row));
    return;
  }
  const NDArray hot = make_ints(c, dest, Shape{count_u}).one_hot(rows, data.dtype());  // [U, rows]
  const NDArray flat_updates = updates.reshape(Shape{count_u, row});
  if (multiplies(c)) {
    c.outputs.push_back(multiply_in_layers(c, data.reshape(Shape{rows, row}), hot, flat_updates, dest).reshape(ds));
    return;
  }
  const NDArray spread = hot.transpose().matmul(flat_updates);  // [rows, row]
  const NDArray count = hot.sum({0}).reshape(Shape{rows, 1});
  c.outputs.push_back(combine(c, data.reshape(Shape{rows, row}), spread, count).reshape(ds));
}

std::string reduction_check(const CheckContext& c) {
  const std::string reduction = c.node.s("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    return fmt::format("reduction '{}' is not supported; ndgc runs 'none', 'add' and 'mul'", reduction);
  return numeric_data(c);
}

// MaxUnpool: zeros of the output shape with x's elements at the flat
// positions I gives (MaxPool's indices), the last of x's elements in row
// major order where two name one position, as ONNX's reference. Run as the
// gather that is the scatter's inverse: each output position takes its
// element of x, or the zero appended after x's elements, so x keeps its
// gradient and the memory is the output's.
Shape unpooled_shape(const RunContext& c, const Shape& xs) {
  if (c.has(2)) {
    const std::vector<std::int64_t> dims = c.ints(2);
    if (int(dims.size()) != xs.rank())
      throw ShapeMismatch(fmt::format("onnx: {}: output_shape has {} dims for an input of rank {}", c.node.label(),
                                      dims.size(), xs.rank()));
    return to_shape(dims);
  }
  const auto n = std::size_t(xs.rank() - 2);
  const std::vector<std::int64_t> kernel = c.node.ints("kernel_shape");
  const std::vector<std::int64_t> strides = c.node.ints("strides", std::vector<std::int64_t>(n, 1));
  const std::vector<std::int64_t> pads = c.node.ints("pads", std::vector<std::int64_t>(2 * n, 0));
  if (kernel.size() != n || strides.size() != n || pads.size() != 2 * n)
    throw InvalidArgument(fmt::format("onnx: {}: kernel_shape, strides or pads do not match {} spatial axes",
                                      c.node.label(), n));
  Shape out = xs;
  for (std::size_t a = 0; a < n; ++a)
    out[int(a) + 2] = (xs[int(a) + 2] - 1) * strides[a] + kernel[a] - pads[a] - pads[a + n];
  return out;
}

void run_max_unpool(RunContext& c) {
  const NDArray& x = c.in(0);
  if (c.in(1).shape() != x.shape())
    throw ShapeMismatch(fmt::format("onnx: {}: indices {} and input {} differ", c.node.label(),
                                    c.in(1).shape().to_string(), x.shape().to_string()));
  const Shape out = unpooled_shape(c, x.shape());
  const std::optional<std::int64_t> out_count = checked_element_count({out.begin(), out.end()});
  if (!out_count)
    throw ShapeMismatch(fmt::format("onnx: {}: the output {} has a negative dimension or too many elements",
                                    c.node.label(), out.to_string()));
  const std::int64_t total = *out_count;
  if (out[0] != x.shape()[0] || out[1] != x.shape()[1])
    throw ShapeMismatch(fmt::format("onnx: {}: the output {} must keep the input's batch and channels {}",
                                    c.node.label(), out.to_string(), x.shape().to_string()));
  const std::int64_t size = x.size();
  std::vector<std::int64_t> source;
  try {
    source.assign(std::size_t(total), size);  // `size`: the appended zero
  } catch (const std::bad_alloc&) {
    throw OutOfMemory(fmt::format("onnx: {}: no host memory for the positions of {} elements", c.node.label(), total),
                      std::size_t(total) * sizeof(std::int64_t), 0, 0);
  }
  const std::vector<std::int64_t> at = c.ints(1);
  for (std::size_t e = 0; e < at.size(); ++e) {
    if (at[e] < 0 || at[e] >= total)
      throw InvalidArgument(fmt::format("onnx: {}: index {} is outside the output {} ({} elements)", c.node.label(),
                                        at[e], out.to_string(), total));
    source[std::size_t(at[e])] = std::int64_t(e);
  }
  const NDArray elements = concat(NDList{x.reshape(Shape{size}), c.manager.zeros(Shape{1}, x.dtype())}, 0);
  c.outputs.push_back(gather_along(c, elements, source, Shape{total}, 0).reshape(out));
}

}  // namespace

void add_scatter_kernels(KernelTable& t) {
  t.add("MaxUnpool", {run_max_unpool, numeric_data, 1, false, 9});
  t.add("ScatterElements", {run_scatter_elements, reduction_check, 1, false, 11});
  t.add("Scatter", {run_scatter_elements, numeric_data, 1, false, 9});
  t.add("ScatterND", {run_scatter_nd, reduction_check, 1, false, 11});
}

}  // namespace ndgc::onnx::detail
