// Tests src/ops/activations.cpp and the softmax / one_hot kernels
// (src/ops/cpu/reduce_kernels.cpp, cpu_engine.cpp): softmax and log_softmax
// along every axis (rows sum to 1, stable for inputs near ±1000), on strided
// inputs; one_hot for every index dtype and output dtype, and the errors.
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops_test_util.hpp"

using namespace ndgc;
using namespace ops_test;

namespace {

// Softmax of x (row-major, `shape`) along `axis`, in long double from the definition.
std::vector<double> ref_softmax(const std::vector<double>& x, const Shape& shape, int axis, bool log) {
  std::vector<double> out(x.size());
  std::int64_t inner = 1;
  for (int i = axis + 1; i < shape.rank(); ++i) inner *= shape[i];
  const std::int64_t len = shape[axis], outer = shape.size() / std::max<std::int64_t>(len * inner, 1);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t in = 0; in < inner; ++in) {
      auto at = [&](std::int64_t k) { return std::size_t(o * len * inner + k * inner + in); };
      long double mx = -std::numeric_limits<long double>::infinity(), sum = 0;
      for (std::int64_t k = 0; k < len; ++k) mx = std::max<long double>(mx, x[at(k)]);
      for (std::int64_t k = 0; k < len; ++k) sum += std::exp(static_cast<long double>(x[at(k)]) - mx);
      for (std::int64_t k = 0; k < len; ++k) {
        long double z = x[at(k)] - mx;
        out[at(k)] = double(log ? z - std::log(sum) : std::exp(z) / sum);
      }
    }
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("softmax and log_softmax of a vector: known values", T, float, double) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {1, 2, 3}, {3});
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  NDArray s = a.softmax();
  CHECK(s.dtype() == dtype_of<T>);
  check_shape(s, {3});
  check_values(s, {std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z}, 1e-6);
  check_values(a.log_softmax(), {1 - std::log(z), 2 - std::log(z), 3 - std::log(z)}, 1e-6);
  check_values(a.softmax(0), values(s));
  check_values(make<T>(m, {5}, {1}).softmax(), {1});
  check_values(make<T>(m, {7, 7, 7, 7}, {4}).softmax(), {0.25, 0.25, 0.25, 0.25});
}

TEST_CASE_TEMPLATE("softmax is stable for large and very negative inputs", T, float, double) {
  NDManager m = fresh();
  NDArray big = make<T>(m, {1000, 1001, 1002}, {3});
  std::vector<double> want = ref_softmax({0, 1, 2}, {3}, 0, false);
  check_values(big.softmax(), want, 1e-6);
  check_values(make<T>(m, {-1000, -1001, -1002}, {3}).softmax(), ref_softmax({2, 1, 0}, {3}, 0, false), 1e-6);
  check_values(big.log_softmax(), ref_softmax({0, 1, 2}, {3}, 0, true), 1e-5);
  // exp(-2000) underflows, but log_softmax stays exact: log(1 + e^-2000) is 0.
  check_values(make<T>(m, {-1000, 1000}, {2}).log_softmax(), {-2000, 0}, 1e-6);
  check_values(make<T>(m, {-1000, 1000}, {2}).softmax(), {0, 1}, 1e-6);
  const double inf = std::numeric_limits<double>::infinity();
  check_values(make<T>(m, {-inf, 0, -inf}, {3}).softmax(), {0, 1, 0});
  check_values(make<T>(m, {-inf, 0}, {2}).log_softmax(), {-inf, 0});
  for (double v : values(make<T>(m, {88, 89, 90, 1e30}, {4}).softmax())) CHECK(std::isfinite(v));
}

TEST_CASE_TEMPLATE("softmax along every axis of a rank-3 array, contiguous or not", T, float, double) {
  NDManager m = fresh();
  const Shape shape{3, 4, 5};
  std::vector<double> x = test_data(60, 41, -5, 5);
  for (double& v : x) v = static_cast<T>(v);
  NDArray a = make<T>(m, x, shape);
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  for (int axis = 0; axis < 3; ++axis) {
    INFO("axis " << axis);
    NDArray s = a.softmax(axis);
    check_shape(s, shape);
    check_values(s, ref_softmax(x, shape, axis, false), tol);
    check_values(a.softmax(axis - 3), ref_softmax(x, shape, axis, false), tol);
    check_values(a.log_softmax(axis), ref_softmax(x, shape, axis, true), tol);
    // Every slice along the axis sums to 1.
    for (double v : values(s.sum({axis}))) CHECK(v == doctest::Approx(1).epsilon(1e-5));
    CHECK(s.is_contiguous());
  }
  // A permuted input: softmax of the view, laid out as the view.
  NDArray p = a.permute({2, 0, 1});  // (5, 3, 4)
  std::vector<double> xp(60);
  for (std::int64_t i = 0; i < 60; ++i) {
    auto idx = unravel(i, {5, 3, 4});
    xp[std::size_t(i)] = x[std::size_t(idx[1] * 20 + idx[2] * 5 + idx[0])];
  }
  for (int axis = 0; axis < 3; ++axis) {
    INFO("permuted, axis " << axis);
    check_values(p.softmax(axis), ref_softmax(xp, {5, 3, 4}, axis, false), tol);
    check_values(p.log_softmax(axis), ref_softmax(xp, {5, 3, 4}, axis, true), tol);
  }
  // A broadcast input.
  NDArray row = make<T>(m, {1, 2, 3}, {3}).broadcast_to({2, 3});
  check_values(row.softmax(0), {0.5, 0.5, 0.5, 0.5, 0.5, 0.5});
  check_values(row.softmax(1).get("1"), ref_softmax({1, 2, 3}, {3}, 0, false), 1e-6);
  // Long rows.
  std::vector<double> w = test_data(4 * 300, 42, -20, 20);
  for (double& v : w) v = static_cast<T>(v);
  check_values(make<T>(m, w, {4, 300}).softmax(), ref_softmax(w, {4, 300}, 1, false), tol);
}

TEST_CASE("softmax of empty arrays, and its errors") {
  NDManager m = fresh();
  check_shape(m.zeros({0, 3}).softmax(), {0, 3});
  check_shape(m.zeros({3, 0}).log_softmax(), {3, 0});
  NDArray i = m.ones({2, 2}, DataType::int32), a = m.ones({2, 2}), s = m.create_scalar(1.0f);
  Footprint before(m);
  CHECK_THROWS_WITH_AS(i.softmax(), doctest::Contains("softmax"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(i.softmax(), doctest::Contains("int32"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(i.log_softmax(), doctest::Contains("log_softmax"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(s.softmax(), doctest::Contains("softmax: "), InvalidArgument);
  CHECK_THROWS_WITH_AS(s.softmax(), doctest::Contains("scalar"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.softmax(2), doctest::Contains("softmax: axis 2 is out of range"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.log_softmax(-3), doctest::Contains("log_softmax: axis -3"), InvalidArgument);
  before.check_unchanged();
}

// ---- one_hot ---------------------------------------------------------------------------

TEST_CASE_TEMPLATE("one_hot from every integer dtype", T, std::int32_t, std::int64_t, std::uint8_t) {
  NDManager m = fresh();
  NDArray idx = make<T>(m, {0, 2, 1}, {3});
  NDArray h = idx.one_hot(3);
  CHECK(h.dtype() == DataType::float32);
  check_shape(h, {3, 3});
  check_values(h, {1, 0, 0, 0, 0, 1, 0, 1, 0});
  check_values(idx.one_hot(4), {1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0});
  NDArray grid = make<T>(m, {3, 0, 1, 1}, {2, 2});
  check_shape(grid.one_hot(4), {2, 2, 4});
  check_values(grid.one_hot(4), {0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0});
  // A transposed index array: classes in the view's order [[3, 1], [0, 1]].
  check_values(grid.transpose().one_hot(4), {0, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0});
  // A scalar index gives a vector; no indices give no rows.
  check_values(m.create_scalar(T(1)).one_hot(3), {0, 1, 0});
  check_shape(make<T>(m, {}, {0}).one_hot(5), {0, 5});
}

TEST_CASE("one_hot writes the requested dtype") {
  NDManager m = fresh();
  NDArray idx = m.create(std::vector<std::int64_t>{1, 0});
  for (DataType t : {DataType::float32, DataType::float64, DataType::int32, DataType::int64, DataType::uint8,
                     DataType::boolean}) {
    INFO(to_string(t));
    NDArray h = idx.one_hot(2, t);
    CHECK(h.dtype() == t);
    check_values(h, {0, 1, 1, 0});
  }
}

TEST_CASE("one_hot rejects bad indices and depths, leaving nothing behind") {
  NDManager m = fresh();
  NDArray idx = m.create(std::vector<std::int32_t>{0, 3, 1});
  NDArray neg = m.create(std::vector<std::int64_t>{0, -1});
  NDArray f = m.create(std::vector<float>{0, 1}), b = make_bool(m, {1, 0}, {2});
  Footprint before(m);
  CHECK_THROWS_WITH_AS(idx.one_hot(3), doctest::Contains("one_hot: index 3 is outside [0, 3)"), InvalidArgument);
  CHECK_THROWS_WITH_AS(neg.one_hot(3), doctest::Contains("index -1"), InvalidArgument);
  CHECK_THROWS_WITH_AS(f.one_hot(3), doctest::Contains("one_hot"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(f.one_hot(3), doctest::Contains("integer class indices"), DTypeMismatch);
  CHECK_THROWS_AS(b.one_hot(3), DTypeMismatch);
  CHECK_THROWS_WITH_AS(idx.one_hot(0), doctest::Contains("one_hot: depth 0 must be positive"), InvalidArgument);
  CHECK_THROWS_AS(idx.one_hot(-2), InvalidArgument);
  CHECK_THROWS_WITH_AS(idx.one_hot(std::int64_t(1) << 62), doctest::Contains("one_hot"), InvalidArgument);
  before.check_unchanged();
}

TEST_CASE_TEMPLATE("gelu: exact values, x Φ(x) with erf", T, float, double) {
  NDManager m = fresh();
  const DataType dt = std::is_same_v<T, float> ? DataType::float32 : DataType::float64;
  NDArray x = m.create(std::vector<double>{0, 1, -1, 2, -3, 6}, {2, 3}).to_type(dt);
  NDArray y = x.gelu();
  CHECK(y.dtype() == dt);
  check_shape(y, {2, 3});
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-14;
  check_values(y, {0, 0.8413447460685429, -0.15865525393145707, 1.9544997361036416, -0.00404969409489031,
                   5.999999994080474},
               tol);
  check_values(x.transpose().gelu(), {0, 1.9544997361036416, 0.8413447460685429, -0.00404969409489031,
                                      -0.15865525393145707, 5.999999994080474},
               tol);
  CHECK_THROWS_AS(m.zeros({2}, DataType::int32).gelu(), DTypeMismatch);
}
