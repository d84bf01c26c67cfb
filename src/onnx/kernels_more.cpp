// Kernels composed of a few ndgc ops each: Sign, IsNaN, IsInf, Shrink,
// Hardmax, OneHot, EyeLike, CumSum, GatherElements, InstanceNormalization,
// DepthToSpace and SpaceToDepth.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "onnx/kernel_support.hpp"
#include "onnx/tensors.hpp"

namespace ndgc::onnx::detail {
namespace {

// Moves axis `from` of x to position `to` (a permutation view).
NDArray move_axis(const NDArray& x, int from, int to) {
  std::vector<int> order;
  for (int k = 0; k < x.rank(); ++k)
    if (k != from) order.push_back(k);
  order.insert(order.begin() + to, from);
  return x.permute(order);
}

// A host-made array of `dtype` in the run's manager.
NDArray host_array(const RunContext& c, const std::vector<double>& values, const Shape& shape, DataType dtype) {
  NDArray a = c.manager.create<double>(values, shape);
  return dtype == DataType::float64 ? a : a.to_type(dtype);
}

void run_sign(RunContext& c) {
  const NDArray& x = c.in(0);
  c.outputs.push_back(x.gt(0.0).to_type(x.dtype()).sub(x.lt(0.0).to_type(x.dtype())));
}

void run_is_inf(RunContext& c) {
  const NDArray& x = c.in(0);
  const double inf = std::numeric_limits<double>::infinity();
  const bool pos = c.node.i("detect_positive", 1) != 0, neg = c.node.i("detect_negative", 1) != 0;
  NDArray p = pos ? x.eq(inf) : x.gt(inf);  // x > inf: false everywhere, NaN included
  NDArray n = neg ? x.eq(-inf) : x.gt(inf);
  c.outputs.push_back(where(p, p, n));
}

void run_shrink(RunContext& c) {
  const NDArray& x = c.in(0);
  const double lambd = c.node.f("lambd", 0.5f), bias = c.node.f("bias", 0.0f);
  const NDArray zero = c.manager.zeros(Shape{}, x.dtype());
  c.outputs.push_back(where(x.lt(-lambd), x.add(bias), where(x.gt(lambd), x.sub(bias), zero)));
}

// 1 at the first maximum along the axis, 0 elsewhere (opset < 13: of the input flattened at axis).
void run_hardmax(RunContext& c) {
  const NDArray& x = c.in(0);
  if (c.opset < 13) {
    const int axis = axis_in(c.node.i("axis", 1), x.rank(), c.node);
    std::int64_t outer = 1;
    for (int k = 0; k < axis; ++k) outer *= x.shape()[k];
    NDArray flat = x.reshape(Shape{outer, -1});
    c.outputs.push_back(flat.argmax(1).one_hot(flat.shape()[1], x.dtype()).reshape(x.shape()));
    return;
  }
  const int axis = axis_in(c.node.i("axis", -1), x.rank(), c.node);
  NDArray hot = x.argmax(axis).one_hot(x.shape()[axis], x.dtype());  // the classes last
  c.outputs.push_back(move_axis(hot, x.rank() - 1, axis));
}

void run_one_hot(RunContext& c) {
  const NDArray& indices = c.in(0);
  const auto depth = static_cast<std::int64_t>(c.scalar(1));
  const NDArray& values = c.in(2);  // [off, on]
  const int axis = axis_in(c.node.i("axis", -1), indices.rank() + 1, c.node);
  NDArray i = indices.to_type(DataType::int64);
  i = where(i.lt(0.0), i.add(double(depth)), i);
  const NDArray off = values.get(NDIndex().add_index(0)), on = values.get(NDIndex().add_index(1));
  NDArray hot = i.one_hot(depth, values.dtype());
  hot = move_axis(hot, hot.rank() - 1, axis);
  c.outputs.push_back(hot.mul(on.sub(off)).add(off));
}

void run_eye_like(RunContext& c) {
  const NDArray& x = c.in(0);
  if (x.rank() != 2) throw InvalidArgument(fmt::format("onnx: {}: the input has rank {}, not 2", c.node.label(), x.rank()));
  const std::int64_t rows = x.shape()[0], cols = x.shape()[1], k = c.node.i("k", 0);
  std::vector<double> v(static_cast<std::size_t>(rows * cols), 0.0);
  for (std::int64_t r = 0; r < rows; ++r)
    if (r + k >= 0 && r + k < cols) v[std::size_t(r * cols + r + k)] = 1.0;
  const DataType dtype = c.node.has("dtype") ? *dtype_of_elem(static_cast<std::int32_t>(c.node.i("dtype", 1))) : x.dtype();
  c.outputs.push_back(host_array(c, v, x.shape(), dtype));
}

std::string eye_like_check(const CheckContext& c) {
  if (c.node.has("dtype") && !dtype_of_elem(static_cast<std::int32_t>(c.node.i("dtype", 1))))
    return fmt::format("dtype {} has no ndgc dtype", elem_name(static_cast<std::int32_t>(c.node.i("dtype", 1))));
  return "";
}

// Along the axis, a product with a triangle of ones: y_j = Σ x_i over i ≤ j
// (i < j exclusive; i ≥ j, i > j reversed).
void run_cumsum(RunContext& c) {
  const NDArray& x = c.in(0);
  const int axis = axis_in(c.ints(1).at(0), x.rank(), c.node);
  const std::int64_t n = x.shape()[axis];
  const bool exclusive = c.node.i("exclusive", 0) != 0, reverse = c.node.i("reverse", 0) != 0;
  std::vector<double> t(static_cast<std::size_t>(n * n), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      const bool in = reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j);
      t[std::size_t(i * n + j)] = in ? 1.0 : 0.0;
    }
  NDArray last = move_axis(x, axis, x.rank() - 1);
  NDArray y = last.matmul(host_array(c, t, Shape{n, n}, x.dtype()));
  c.outputs.push_back(move_axis(y, x.rank() - 1, axis));
}

// out[..., j, ...] = data[..., indices[..., j, ...], ...] along the axis.
// Floating data: a one-hot product (it has a gradient); other data on the host.
// The elements of `cut` at `idx` (in [0, n) along `axis`, row-major over
// `is`, which matches cut's shape on every other axis): GatherElements. For
// floating data a one-hot product, so it has a gradient; integers on the host.
NDArray gather_elements(const RunContext& c, const NDArray& cut, const std::vector<std::int64_t>& idx, const Shape& is,
                        int axis) {
  const int rank = cut.rank();
  const std::int64_t n = cut.shape()[axis];
  if (is_floating(cut.dtype())) {
    NDArray hot = make_ints(c, idx, is).one_hot(n, cut.dtype());                  // is + [n]
    NDArray table = move_axis(cut, axis, rank - 1).expand_dims(rank - 1);       // others + [1, n]
    NDArray picked = move_axis(hot, axis, rank - 1).mul(table).sum({-1});       // others + [m]
    return move_axis(picked, rank - 1, axis);
  }
  const std::vector<std::int64_t> values = read_ints(cut.contiguous());
  const Shape cs = cut.shape();
  std::vector<std::int64_t> out(idx.size());
  std::vector<std::int64_t> at(std::size_t(is.rank()), 0);
  for (std::size_t e = 0; e < idx.size(); ++e) {
    std::int64_t offset = 0;
    for (int k = 0; k < is.rank(); ++k) offset = offset * cs[k] + (k == axis ? idx[e] : at[std::size_t(k)]);
    out[e] = values[std::size_t(offset)];
    for (int k = is.rank() - 1; k >= 0 && ++at[std::size_t(k)] == is[k]; --k) at[std::size_t(k)] = 0;
  }
  NDArray r = make_ints(c, out, is);
  return cut.dtype() == DataType::int64 ? r : r.to_type(cut.dtype());
}

// GatherND: the slices of data that the last axis of `indices` addresses,
// after `batch_dims` leading axes they share. The positions are found on the
// host; the slices are one gather of data seen as [B·N, rest] (B the batch
// axes' product, N the addressed axes'), so floating data keeps its gradient.
void run_gather_nd(RunContext& c) {
  const NDArray& data = c.in(0);
  const Shape ds = data.shape(), is = c.in(1).shape();
  const std::int64_t b = c.node.i("batch_dims", 0);
  const std::int64_t q = is.rank() > 0 ? is[is.rank() - 1] : 0;
  if (is.rank() < 1 || b < 0 || b >= is.rank() || b + q > ds.rank() || q < 1)
    throw ShapeMismatch(fmt::format("onnx: {}: indices {} with batch_dims {} do not address data {}", c.node.label(),
                                    is.to_string(), b, ds.to_string()));
  std::int64_t batches = 1, addressed = 1;
  for (int k = 0; k < b; ++k) {
    if (is[k] != ds[k])
      throw ShapeMismatch(fmt::format("onnx: {}: indices {} and data {} differ on batch axis {}", c.node.label(),
                                      is.to_string(), ds.to_string(), k));
    batches *= ds[k];
  }
  for (std::int64_t k = b; k < b + q; ++k) addressed *= ds[int(k)];
  const std::vector<std::int64_t> idx = c.ints(1);
  const auto tuples = std::int64_t(idx.size()) / q, per_batch = batches > 0 ? tuples / batches : 0;
  std::vector<std::int64_t> at(static_cast<std::size_t>(tuples));
  for (std::int64_t t = 0; t < tuples; ++t) {
    std::int64_t flat = 0;
    for (std::int64_t j = 0; j < q; ++j) {
      const std::int64_t n = ds[int(b + j)];
      std::int64_t i = idx[std::size_t(t * q + j)];
      if (i < -n || i >= n)
        throw InvalidArgument(fmt::format("onnx: {}: index {} is out of range for axis {} of length {}", c.node.label(),
                                          i, b + j, n));
      flat = flat * n + (i < 0 ? i + n : i);
    }
    at[std::size_t(t)] = t / per_batch * addressed + flat;
  }
  std::vector<std::int64_t> rows{batches * addressed}, out_dims(is.begin(), is.end() - 1);
  for (int k = int(b + q); k < ds.rank(); ++k) rows.push_back(ds[k]);
  c.outputs.push_back(gather_along(c, data.reshape(to_shape(rows)), at, to_shape(out_dims), 0));
}

void run_gather_elements(RunContext& c) {
  const NDArray& data = c.in(0);
  const int axis = axis_in(c.node.i("axis", 0), data.rank(), c.node);
  const Shape ds = data.shape(), is = c.in(1).shape();
  if (is.rank() != ds.rank())
    throw ShapeMismatch(fmt::format("onnx: {}: indices {} and data {} differ in rank", c.node.label(), is.to_string(),
                                    ds.to_string()));
  const std::int64_t n = ds[axis];
  std::vector<std::int64_t> idx = c.ints(1);
  for (std::int64_t& i : idx) {
    if (i < -n || i >= n)
      throw InvalidArgument(fmt::format("onnx: {}: index {} is out of range for axis {} of length {}", c.node.label(), i,
                                        axis, n));
    if (i < 0) i += n;
  }
  NDIndex extent;  // data cut to the indices' extent on every other axis
  for (int k = 0; k < ds.rank(); ++k) {
    if (k != axis && is[k] > ds[k])
      throw ShapeMismatch(fmt::format("onnx: {}: indices {} exceed data {} on axis {}", c.node.label(), is.to_string(),
                                      ds.to_string(), k));
    if (k == axis) extent.add_all();
    else extent.add_slice(0, is[k]);
  }
  c.outputs.push_back(gather_elements(c, data.get(extent), idx, is, axis));
}

void run_instance_norm(RunContext& c) {
  const NDArray& x = c.in(0);
  std::vector<int> axes;
  for (int k = 2; k < x.rank(); ++k) axes.push_back(k);
  Shape per_channel(std::vector<std::int64_t>(std::size_t(x.rank()), 1));
  per_channel[1] = x.shape()[1];
  const NDArray mean = x.mean(axes, true), centred = x.sub(mean);
  const NDArray var = centred.mul(centred).mean(axes, true);
  NDArray y = centred.div(var.add(double(c.node.f("epsilon", 1e-5f))).sqrt());
  c.outputs.push_back(y.mul(c.in(1).reshape(per_channel)).add(c.in(2).reshape(per_channel)));
}

// The positions of x's nonzero elements: [rank, count], row-major order.
void run_nonzero(RunContext& c) {
  const NDArray& x = c.in(0);
  const std::vector<double> v = read_doubles(x);
  const Shape xs = x.shape();
  std::vector<std::vector<std::int64_t>> at(std::size_t(x.rank()));
  std::vector<std::int64_t> pos(std::size_t(x.rank()), 0);
  for (double e : v) {
    if (e != 0)
      for (std::size_t k = 0; k < pos.size(); ++k) at[k].push_back(pos[k]);
    for (int k = x.rank() - 1; k >= 0 && ++pos[std::size_t(k)] == xs[k]; --k) pos[std::size_t(k)] = 0;
  }
  const std::size_t count = v.empty() ? 0 : (at.empty() ? std::size_t(v[0] != 0) : at[0].size());
  std::vector<std::int64_t> flat;
  for (const auto& row : at) flat.insert(flat.end(), row.begin(), row.end());
  c.outputs.push_back(make_ints(c, flat, Shape{x.rank(), std::int64_t(count)}));
}

// The slices of x along `axis` (x flattened when there is none) where the
// boolean condition is true; a condition shorter than the axis drops the rest.
void run_compress(RunContext& c) {
  NDArray x = c.in(0);
  int axis = 0;
  if (c.node.has("axis")) axis = axis_in(c.node.i("axis", 0), x.rank(), c.node);
  else x = x.reshape(Shape{x.size()});
  const std::vector<double> keep = c.doubles(1);
  const std::int64_t n = x.shape()[axis];
  if (std::int64_t(keep.size()) > n)
    throw InvalidArgument(fmt::format("onnx: {}: a condition of {} for an axis of {}", c.node.label(), keep.size(), n));
  std::vector<std::int64_t> at;
  for (std::size_t i = 0; i < keep.size(); ++i)
    if (keep[i] != 0) at.push_back(std::int64_t(i));
  c.outputs.push_back(gather_along(c, x, at, Shape{std::int64_t(at.size())}, axis));
}

// The k largest (or smallest) elements along `axis` and their positions,
// sorted (also when `sorted` is 0, which leaves the order free), ties to the
// lower position (ONNX's reference). The positions are
// found on the host; the values are gathered from x, so they have x's gradient.
void run_top_k(RunContext& c) {
  const NDArray& x = c.in(0);
  const int axis = axis_in(c.node.i("axis", -1), x.rank(), c.node);
  const std::vector<std::int64_t> ks = c.opset < 10 ? std::vector<std::int64_t>{c.node.i("k", 0)} : c.ints(1);
  if (ks.size() != 1)
    throw InvalidArgument(fmt::format("onnx: {}: K holds {} values; it must hold one", c.node.label(), ks.size()));
  const std::int64_t k = ks[0];
  const std::int64_t n = x.shape()[axis];
  if (k < 0 || k > n)
    throw InvalidArgument(fmt::format("onnx: {}: k {} for an axis of {}", c.node.label(), k, n));
  const bool largest = c.node.i("largest", 1) != 0;
  const std::vector<double> v = read_doubles(x);
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  Shape out_shape = x.shape();
  out_shape[axis] = k;
  std::vector<std::int64_t> idx(std::size_t(outer * k * inner));
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t e = 0; e < inner; ++e) {
      auto value = [&](std::int64_t i) { return v[std::size_t((o * n + i) * inner + e)]; };
      for (std::int64_t i = 0; i < n; ++i) order[std::size_t(i)] = i;
      std::stable_sort(order.begin(), order.end(),
                       [&](std::int64_t a, std::int64_t b) { return largest ? value(a) > value(b) : value(a) < value(b); });
      for (std::int64_t j = 0; j < k; ++j) idx[std::size_t((o * k + j) * inner + e)] = order[std::size_t(j)];
    }
  c.outputs.push_back(gather_elements(c, x, idx, out_shape, axis));
  c.outputs.push_back(make_ints(c, idx, out_shape));
}

// ReverseSequence: for each batch entry b, its first sequence_lens[b] steps
// along time_axis reversed, the rest as they are. One gather along the time
// axis per batch entry, concatenated along batch_axis, so x keeps its
// gradient.
void run_reverse_sequence(RunContext& c) {
  const NDArray& x = c.in(0);
  const int time = axis_in(c.node.i("time_axis", 0), x.rank(), c.node);
  const int batch = axis_in(c.node.i("batch_axis", 1), x.rank(), c.node);
  const std::vector<std::int64_t> lens = c.ints(1);
  const std::int64_t steps = x.shape()[time], entries = x.shape()[batch];
  if (time == batch || std::int64_t(lens.size()) != entries)
    throw ShapeMismatch(fmt::format("onnx: {}: {} sequence_lens for {} batch entries (time axis {}, batch axis {})",
                                    c.node.label(), lens.size(), entries, time, batch));
  NDList parts;
  for (std::int64_t b = 0; b < entries; ++b) {
    const std::int64_t len = lens[std::size_t(b)];
    if (len < 0 || len > steps)
      throw InvalidArgument(fmt::format("onnx: {}: sequence_lens[{}] is {}, outside [0, {}]", c.node.label(), b, len,
                                        steps));
    std::vector<std::int64_t> order(static_cast<std::size_t>(steps));
    for (std::int64_t t = 0; t < steps; ++t) order[std::size_t(t)] = t < len ? len - 1 - t : t;
    NDIndex entry;
    for (int k = 0; k < batch; ++k) entry.add_all();
    entry.add_slice(b, b + 1);
    parts.push_back(gather_along(c, x.get(entry), order, Shape{steps}, time));
  }
  c.outputs.push_back(entries == 0 ? x : entries == 1 ? parts.head() : concat(parts, batch));
}

// BitShift of uint8 (ndgc's one unsigned dtype): x · 2^y or ⌊x / 2^y⌋ in
// int64, then back to uint8, which keeps the low 8 bits as a shift does.
// The powers of two are made on the host from y's values (a shift of 8 or
// more leaves 0 either way).
void run_bit_shift(RunContext& c) {
  const NDArray& x = c.in(0);
  const NDArray& y = c.in(1);
  std::vector<std::int64_t> powers = read_ints(y);
  for (std::int64_t& p : powers) p = p >= 0 && p < 8 ? std::int64_t(1) << p : 256;
  const NDArray scale = make_ints(c, powers, y.shape());
  const NDArray wide = x.to_type(DataType::int64);
  const bool left = c.node.s("direction", "") == "LEFT";
  c.outputs.push_back((left ? wide.mul(scale) : wide.div(scale)).to_type(DataType::uint8));
}

std::string bit_shift_check(const CheckContext& c) {
  const std::string direction = c.node.s("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") return fmt::format("direction '{}' is not LEFT or RIGHT", direction);
  for (const std::optional<DataType>& dt : c.input_dtypes)
    if (dt && *dt != DataType::uint8) return fmt::format("its input is {}; ndgc runs BitShift on uint8", to_string(*dt));
  return "";
}

// ONNX's function body: (x - E[x]) / (sqrt(E[x²] - E[x]²) + 1e-9) over `axes`
// (default N, H and W).
void run_mean_variance_normalization(RunContext& c) {
  const NDArray& x = c.in(0);
  std::vector<int> axes;
  for (std::int64_t a : c.node.ints("axes", {0, 2, 3})) axes.push_back(axis_in(a, x.rank(), c.node));
  const NDArray mean = x.mean(axes, true);
  const NDArray variance = x.mul(x).mean(axes, true).sub(mean.mul(mean));
  c.outputs.push_back(x.sub(mean).div(variance.sqrt().add(1e-9)));
}

// Local response normalisation across channels (axis 1):
// y = x / (bias + alpha / size · Σ x²)^beta, the sum over the `size` channels
// from c - ⌊(size-1)/2⌋ to c + ⌈(size-1)/2⌉, zeros past the ends.
void run_lrn(RunContext& c) {
  const NDArray& x = c.in(0);
  const std::int64_t size = c.node.i("size", 0);
  if (size < 1 || x.rank() < 3)
    throw InvalidArgument(fmt::format("onnx: {}: LRN needs size >= 1 (it is {}) and an [N, C, ...] input, not {}",
                                      c.node.label(), size, x.shape().to_string()));
  const std::int64_t channels = x.shape()[1];
  const NDArray padded = pad_constant(c, x.mul(x), 1, (size - 1) / 2, size / 2, 0.0);
  NDArray sum;
  for (std::int64_t k = 0; k < size; ++k) {
    const NDArray window = padded.get(NDIndex().add_all().add_slice(k, k + channels));
    sum = sum.defined() ? sum.add(window) : window;
  }
  const double alpha = c.node.f("alpha", 1e-4f), beta = c.node.f("beta", 0.75f), bias = c.node.f("bias", 1.0f);
  c.outputs.push_back(x.div(sum.mul(alpha / double(size)).add(bias).pow(beta)));
}

void run_depth_to_space(RunContext& c) {
  const NDArray& x = c.in(0);
  const std::int64_t b = c.node.i("blocksize", 1);
  if (x.rank() != 4 || x.shape()[1] % (b * b) != 0)
    throw ShapeMismatch(fmt::format("onnx: {}: {} does not hold blocks of {}x{}", c.node.label(), x.shape().to_string(), b, b));
  const std::int64_t n = x.shape()[0], ch = x.shape()[1] / (b * b), h = x.shape()[2], w = x.shape()[3];
  const bool crd = c.node.s("mode", "DCR") == "CRD";
  NDArray y = crd ? x.reshape(Shape{n, ch, b, b, h, w}).permute({0, 1, 4, 2, 5, 3})
                  : x.reshape(Shape{n, b, b, ch, h, w}).permute({0, 3, 4, 1, 5, 2});
  c.outputs.push_back(y.reshape(Shape{n, ch, h * b, w * b}));
}

void run_space_to_depth(RunContext& c) {
  const NDArray& x = c.in(0);
  const std::int64_t b = c.node.i("blocksize", 1);
  if (x.rank() != 4 || x.shape()[2] % b != 0 || x.shape()[3] % b != 0)
    throw ShapeMismatch(fmt::format("onnx: {}: {} does not split into blocks of {}x{}", c.node.label(), x.shape().to_string(), b, b));
  const std::int64_t n = x.shape()[0], ch = x.shape()[1], h = x.shape()[2] / b, w = x.shape()[3] / b;
  NDArray y = x.reshape(Shape{n, ch, h, b, w, b}).permute({0, 3, 5, 1, 2, 4});
  c.outputs.push_back(y.reshape(Shape{n, ch * b * b, h, w}));
}

}  // namespace

void add_more_kernels(KernelTable& t) {
  t.add("Sign", {run_sign, numeric_data});
  t.add("IsNaN", {[](RunContext& c) { c.outputs.push_back(c.in(0).ne(c.in(0))); }, floats_only});
  t.add("IsInf", {run_is_inf, floats_only});
  t.add("Shrink", {run_shrink, numeric_data});
  t.add("Hardmax", {run_hardmax, floats_only});
  t.add("OneHot", {run_one_hot});
  t.add("EyeLike", {run_eye_like, eye_like_check});
  t.add("CumSum", {run_cumsum, floats_only});
  t.add("GatherElements", {run_gather_elements});
  t.add("GatherND", {run_gather_nd, nullptr, 1, false, 11});
  t.add("InstanceNormalization", {run_instance_norm, floats_only});
  t.add("MeanVarianceNormalization", {run_mean_variance_normalization, floats_only});
  t.add("LRN", {run_lrn, floats_only});
  t.add("NonZero", {run_nonzero});
  t.add("BitShift", {run_bit_shift, bit_shift_check, 1, false, 11});
  t.add("ReverseSequence", {run_reverse_sequence, nullptr, 1, false, 10});
  t.add("Compress", {run_compress, nullptr, 1, false, 9});
  t.add("TopK", {run_top_k, numeric_data, 2});
  t.add("DepthToSpace", {run_depth_to_space});
  t.add("SpaceToDepth", {run_space_to_depth});
}

}  // namespace ndgc::onnx::detail
