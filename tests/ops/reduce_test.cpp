// Tests src/ops/reduce.cpp and src/ops/cpu/reduce_kernels.cpp: sum, mean,
// max, min over any set of axes (keepdims, negative axes, all axes), argmax
// and argmin, the dtype rules, empty axes, NaN and every error path. The
// expected values come from a plain loop over row-major indices.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ops_test_util.hpp"

using namespace ndgc;
using namespace ops_test;

namespace {

enum class ReduceOp { sum, mean, max, min };

// Reduces `x` (row-major, `shape`) over the axes in `mask` by a plain loop.
std::vector<double> ref_reduce(ReduceOp op, const std::vector<double>& x, const Shape& shape, std::uint32_t mask,
                               Shape* out_shape) {
  Shape kept;
  for (int i = 0; i < shape.rank(); ++i) kept.push_back(mask >> i & 1 ? 1 : shape[i]);
  std::vector<double> acc(std::size_t(kept.size()), op == ReduceOp::max   ? -std::numeric_limits<double>::infinity()
                                                    : op == ReduceOp::min ? std::numeric_limits<double>::infinity()
                                                                    : 0.0);
  std::int64_t count = 1;
  for (int i = 0; i < shape.rank(); ++i)
    if (mask >> i & 1) count *= shape[i];
  for (std::int64_t f = 0; f < shape.size(); ++f) {
    auto idx = unravel(f, shape);
    std::int64_t o = 0;
    for (int i = 0; i < shape.rank(); ++i) o = o * kept[i] + (mask >> i & 1 ? 0 : idx[std::size_t(i)]);
    double& a = acc[std::size_t(o)];
    double v = x[std::size_t(f)];
    if (op == ReduceOp::max) a = std::max(a, v);
    else if (op == ReduceOp::min) a = std::min(a, v);
    else a += v;
  }
  if (op == ReduceOp::mean)
    for (double& a : acc) a /= double(count);
  if (out_shape) *out_shape = kept;
  return acc;
}

NDArray run(ReduceOp op, const NDArray& a, const std::vector<int>& axes, bool keepdims) {
  switch (op) {
    case ReduceOp::sum: return a.sum(axes, keepdims);
    case ReduceOp::mean: return a.mean(axes, keepdims);
    case ReduceOp::max: return a.max(axes, keepdims);
    case ReduceOp::min: return a.min(axes, keepdims);
  }
  return {};
}

Shape drop_reduced(const Shape& kept, std::uint32_t mask) {
  Shape s;
  for (int i = 0; i < kept.rank(); ++i)
    if (!(mask >> i & 1)) s.push_back(kept[i]);
  return s;
}

}  // namespace

TEST_CASE_TEMPLATE("reductions of a small matrix give hand-computed values", T, float, double, std::int32_t,
                   std::int64_t) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(a.sum().dtype() == dtype_of<T>);
  check_shape(a.sum(), Shape{});
  CHECK(a.sum().template item<T>() == T(21));
  check_values(a.sum({0}), {5, 7, 9});
  check_values(a.sum({1}), {6, 15});
  check_values(a.sum({-1}), {6, 15});
  check_values(a.sum({-2}), {5, 7, 9});
  check_shape(a.sum({1}, true), {2, 1});
  check_shape(a.sum({0}, true), {1, 3});
  check_shape(a.sum({0, 1}), Shape{});
  check_shape(a.sum({1, 0}, true), {1, 1});
  check_values(a.sum({0, -1}, true), {21});
  check_values(a.max(), {6});
  check_values(a.min(), {1});
  check_values(a.max({0}), {4, 5, 6});
  check_values(a.min({1}), {1, 4});
  check_values(a.max({-1}, true), {3, 6});
  check_shape(a.min({-1}, true), {2, 1});
  CHECK(a.max({0}).dtype() == dtype_of<T>);
  // mean: floats keep their dtype, integers give float32.
  NDArray mean0 = a.mean({0});
  CHECK(mean0.dtype() == (is_floating(dtype_of<T>) ? dtype_of<T> : DataType::float32));
  check_values(mean0, {2.5, 3.5, 4.5});
  check_values(a.mean({1}), {2, 5});
  check_values(a.mean(), {3.5});
  check_shape(a.mean(), Shape{});
}

TEST_CASE_TEMPLATE("every axis subset of a rank-3 array, keepdims or not, contiguous or not", T, float, double,
                   std::int32_t) {
  NDManager m = fresh();
  const Shape shape{3, 4, 5};
  std::vector<double> x = test_data(60, 21, -10, 10);
  for (double& v : x) v = std::is_integral_v<T> ? std::round(v) : static_cast<double>(static_cast<T>(v));
  NDArray a = make<T>(m, x, shape);
  // A permuted copy: same values, other layout (its reduction must match the reference on its own order).
  NDArray p = a.permute({2, 0, 1});  // (5, 3, 4), not contiguous
  std::vector<double> xp(60);
  for (std::int64_t i = 0; i < 60; ++i) {
    auto idx = unravel(i, {5, 3, 4});
    xp[std::size_t(i)] = x[std::size_t((idx[1] * 4 + idx[2]) * 5 + idx[0])];
  }
  const double tol = std::is_same_v<T, double> ? 1e-12 : 1e-5;  // integer means are float32
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::max, ReduceOp::min}) {
    for (std::uint32_t mask = 1; mask < 8; ++mask) {
      std::vector<int> axes, neg_axes;
      for (int i = 0; i < 3; ++i)
        if (mask >> i & 1) axes.push_back(i), neg_axes.push_back(i - 3);
      for (bool keep : {false, true}) {
        INFO("op " << int(op) << " mask " << mask << " keepdims " << keep);
        Shape kept;
        std::vector<double> want = ref_reduce(op, x, shape, mask, &kept);
        NDArray r = run(op, a, axes, keep);
        check_shape(r, keep ? kept : drop_reduced(kept, mask));
        check_values(r, want, tol);
        check_values(run(op, a, neg_axes, keep), want, tol);
        Shape kept_p;
        std::vector<double> want_p = ref_reduce(op, xp, {5, 3, 4}, mask, &kept_p);
        NDArray rp = run(op, p, axes, keep);
        check_shape(rp, keep ? kept_p : drop_reduced(kept_p, mask));
        check_values(rp, want_p, tol);
      }
    }
  }
}

TEST_CASE("reducing the leading axes of a contiguous array (the bias-gradient path)") {
  NDManager m = fresh();
  std::vector<double> x = test_data(64 * 10, 3);
  NDArray a = m.create(x, {4, 16, 10});
  Shape kept;
  check_values(a.sum({0, 1}), ref_reduce(ReduceOp::sum, x, {4, 16, 10}, 3, &kept), 1e-12);
  check_values(a.mean({0}), ref_reduce(ReduceOp::mean, x, {4, 16, 10}, 1, &kept), 1e-12);
  check_values(a.max({0, 1}), ref_reduce(ReduceOp::max, x, {4, 16, 10}, 3, &kept));
  check_values(a.min({0}), ref_reduce(ReduceOp::min, x, {4, 16, 10}, 1, &kept));
  // Length-1 axes mixed in, kept and reduced.
  NDArray b = a.reshape({4, 1, 16, 10});
  check_values(b.sum({0, 1}), ref_reduce(ReduceOp::sum, x, {4, 16, 10}, 1, &kept), 1e-12);
  check_values(b.sum({1}), x, 1e-12);
  // Every axis but a middle one, as a conv's bias gradient: [N, C, H, W] over {0, 2, 3}
  // (Note [Reduced on both sides] in src/ops/cpu/reduce_kernels.cpp), and over {0, 3}.
  const Shape four{3, 4, 5, 6};
  std::vector<double> y = test_data(360, 9);
  NDArray c = m.create(y, four);
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::max, ReduceOp::min}) {
    INFO("op " << int(op));
    check_values(run(op, c, {0, 2, 3}, false), ref_reduce(op, y, four, 0b1101, &kept), 1e-12);
    check_values(run(op, c, {0, 3}, false), ref_reduce(op, y, four, 0b1001, &kept), 1e-12);
    check_values(run(op, c.reshape({3, 1, 4, 5, 1, 6}), {0, 1, 3, 5}, false), ref_reduce(op, y, four, 0b1101, &kept),
                 1e-12);
  }
  // An integer mean over both sides divides the exact total once, as a
  // one-pass mean (and the GPU's) does: not (total / S) / P, which can
  // differ in the last bit.
  std::vector<double> whole(120);
  for (std::size_t i = 0; i < whole.size(); ++i) whole[i] = double(std::int64_t(i * 7919 % 19) - 9);
  NDArray ints = m.create(whole, Shape{4, 5, 6}).to_type(DataType::int64);
  const std::vector<float> means = ints.mean({0, 2}).to_vector<float>();
  const std::vector<float> sums = ints.sum({0, 2}).to_type(DataType::float32).to_vector<float>();
  for (std::size_t k = 0; k < sums.size(); ++k) CHECK(means[k] == sums[k] / 24.0f);
  // A broadcast view: every element counted.
  NDArray row = m.create(std::vector<float>{1, 2, 3});
  check_values(row.broadcast_to({4, 3}).sum({0}), {4, 8, 12});
  check_values(row.broadcast_to({4, 3}).sum(), {24});
  check_values(row.broadcast_to({4, 3}).max({1}), {3, 3, 3, 3});
}

TEST_CASE("reduction dtype rules: boolean sums count, integer means are float32") {
  NDManager m = fresh();
  NDArray flags = make_bool(m, {1, 0, 1, 1, 0, 1}, {2, 3});
  NDArray count = flags.sum();
  CHECK(count.dtype() == DataType::int64);
  CHECK(count.item<std::int64_t>() == 4);
  CHECK(flags.sum({0}).dtype() == DataType::int64);
  check_values(flags.sum({0}), {2, 0, 2});
  check_values(flags.sum({1}), {2, 2});
  CHECK(flags.mean().dtype() == DataType::float32);
  check_values(flags.mean({1}), {2.0 / 3, 2.0 / 3});
  CHECK(flags.max().dtype() == DataType::boolean);
  CHECK(flags.max().item<bool>() == true);
  CHECK(flags.min().item<bool>() == false);
  check_values(flags.min({0}), {1, 0, 1});
  check_values(flags.max({1}), {1, 1});

  NDArray ints = m.create(std::vector<std::int32_t>{1, 2, 3, 5}, {2, 2});
  CHECK(ints.mean().dtype() == DataType::float32);
  CHECK(ints.mean().item<float>() == 2.75f);
  CHECK(ints.sum().dtype() == DataType::int32);
  NDArray bytes = m.create(std::vector<std::uint8_t>{200, 7, 255});
  CHECK(bytes.max().dtype() == DataType::uint8);
  CHECK(bytes.max().item<std::uint8_t>() == 255);
  CHECK(bytes.min().item<std::uint8_t>() == 7);
  CHECK(bytes.mean().item<float>() == doctest::Approx(154.0));
  NDArray longs = m.create(std::vector<std::int64_t>{std::int64_t(1) << 40, 1});
  CHECK(longs.sum().item<std::int64_t>() == (std::int64_t(1) << 40) + 1);
}

TEST_CASE("reductions of scalars, empty axes and large arrays") {
  NDManager m = fresh();
  NDArray s = m.create_scalar(3.5);
  check_shape(s.sum(), Shape{});
  CHECK(s.sum().item<double>() == 3.5);
  CHECK(s.max().item<double>() == 3.5);
  CHECK(s.mean().item<double>() == 3.5);

  NDArray e = m.zeros({0, 3});
  check_shape(e.sum({0}), {3});
  check_values(e.sum({0}), {0, 0, 0});
  check_values(e.sum(), {0});
  CHECK(std::isnan(e.mean().item<float>()));
  check_shape(e.sum({1}), {0});
  check_shape(e.max({1}), {0});  // nothing to reduce over, nothing empty
  CHECK_THROWS_WITH_AS(e.max(), doctest::Contains("max: axis 0"), InvalidArgument);
  CHECK_THROWS_WITH_AS(e.min({0}), doctest::Contains("is empty"), InvalidArgument);
  CHECK_THROWS_WITH_AS(e.max({0}, true), doctest::Contains("(0, 3)"), InvalidArgument);
  CHECK_THROWS_WITH_AS(e.argmax(), doctest::Contains("argmax"), InvalidArgument);
  CHECK_THROWS_WITH_AS(e.argmin(0), doctest::Contains("argmin"), InvalidArgument);
  check_shape(e.argmax(1), {0});

  NDArray big = m.arange(0, 1000);
  CHECK(big.sum().item<float>() == 499500.0f);
  CHECK(big.mean().item<float>() == 499.5f);
  CHECK(m.ones({1000, 1000}).sum().item<float>() == 1e6f);
  CHECK(m.ones({1000, 1000}).sum({1}).max().item<float>() == 1000.0f);
}

TEST_CASE("max and min propagate NaN, as NumPy's do") {
  NDManager m = fresh();
  const double nan = std::nan("");
  NDArray a = m.create(std::vector<double>{1, nan, 3, 4}, {2, 2});
  CHECK(std::isnan(a.max().item<double>()));
  CHECK(std::isnan(a.min().item<double>()));
  check_values(a.max({0}), {3, nan});
  check_values(a.min({1}), {nan, 3});
  check_values(a.max({1}), {nan, 4});
  // Long rows (vectorised) too.
  std::vector<float> v(64, 1.0f);
  v[37] = float(nan);
  CHECK(std::isnan(m.create(v).max().item<float>()));
  CHECK(std::isnan(m.create(v).min().item<float>()));
  CHECK(std::isnan(m.create(v, {8, 8}).max({1}).to_vector<float>()[4]));
  CHECK(m.create(v, {8, 8}).max({1}).to_vector<float>()[3] == 1.0f);
  // sum and mean propagate it arithmetically.
  CHECK(std::isnan(a.sum().item<double>()));
  check_values(a.mean({0}), {2, nan});
}

TEST_CASE("reductions reject bad axes, naming the op and the array") {
  NDManager m = fresh();
  NDArray a = m.ones({2, 3}), s = m.create_scalar(1.0f);
  Footprint before(m);
  CHECK_THROWS_WITH_AS(a.sum({2}), doctest::Contains("sum: axis 2 is out of range"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.sum({2}), doctest::Contains("(2, 3)"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.mean({-3}), doctest::Contains("mean: axis -3"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.max({0, 0}), doctest::Contains("max: axis 0 is listed twice"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.min({1, -1}), doctest::Contains("listed twice"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.argmax(2), doctest::Contains("argmax: axis 2"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.argmin(-3), doctest::Contains("argmin"), InvalidArgument);
  CHECK_THROWS_WITH_AS(s.sum({0}), doctest::Contains("()"), InvalidArgument);
  before.check_unchanged();
}

// ---- argmax / argmin -----------------------------------------------------------

TEST_CASE_TEMPLATE("argmax and argmin, flattened and along an axis", T, float, double, std::int32_t, std::int64_t,
                   std::uint8_t) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {1, 5, 2, 7, 0, 7}, {2, 3});
  NDArray i = a.argmax();
  CHECK(i.dtype() == DataType::int64);
  check_shape(i, Shape{});
  CHECK(i.template item<std::int64_t>() == 3);  // the first of two maxima
  CHECK(a.argmin().template item<std::int64_t>() == 4);
  check_values(a.argmax(0), {1, 0, 1});
  check_values(a.argmax(1), {1, 0});
  check_values(a.argmax(-1), {1, 0});
  check_values(a.argmin(0), {0, 1, 0});
  check_values(a.argmin(1), {0, 1});
  check_shape(a.argmax(0), {3});
  check_shape(a.argmax(1, true), {2, 1});
  check_shape(a.argmin(0, true), {1, 3});
  CHECK(a.argmax(1).dtype() == DataType::int64);
  // Non-contiguous: the transpose (3, 2) = [[1, 7], [5, 0], [2, 7]].
  NDArray t = a.transpose();
  CHECK(t.argmax().template item<std::int64_t>() == 1);
  CHECK(t.argmin().template item<std::int64_t>() == 3);
  check_values(t.argmax(0), {1, 0});
  check_values(t.argmax(1), {1, 0, 1});
  check_values(t.argmin(1), {0, 1, 0});
  // Rank 3, a middle axis.
  std::vector<double> x = {3, 9, 4, 4, 8, 1, 0, 2, 6, 6, 5, 7};  // (2, 3, 2)
  NDArray b = make<T>(m, x, {2, 3, 2});
  check_values(b.argmax(1), {2, 0, 1, 2});
  check_values(b.argmin(1), {0, 2, 0, 0});
  check_values(b.argmax(2), {1, 0, 0, 1, 0, 1});
  check_shape(b.argmax(1, true), {2, 1, 2});
  CHECK(b.argmax().template item<std::int64_t>() == 1);
  // A scalar: index 0.
  CHECK(m.create_scalar(T(4)).argmax().template item<std::int64_t>() == 0);
}

TEST_CASE("argmax and argmin treat NaN as the extreme, as NumPy does") {
  NDManager m = fresh();
  const double nan = std::nan("");
  NDArray a = m.create(std::vector<double>{1, nan, 3, nan});
  CHECK(a.argmax().item<std::int64_t>() == 1);
  CHECK(a.argmin().item<std::int64_t>() == 1);
  NDArray b = m.create(std::vector<float>{4, 1, float(nan), 2, 9, 8}, {2, 3});
  check_values(b.argmax(1), {2, 1});
  check_values(b.argmin(1), {2, 0});
  check_values(b.argmax(0), {0, 1, 0});
}
