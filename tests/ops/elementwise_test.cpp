// Tests src/ops/elementwise.cpp and the CPU kernels behind it
// (src/ops/cpu/elementwise_kernels.cpp, strided.hpp): binary ops with NumPy
// broadcasting, scalar operands, comparisons, where, unary functions and the
// in-place forms, in every dtype the op allows, on contiguous, strided and
// broadcast operands (the Eigen fast path needs rows of 8 or more).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops_test_util.hpp"

using namespace ndgc;
using namespace ops_test;

// ---- binary ops, known values ----------------------------------------------

TEST_CASE_TEMPLATE("binary ops on floats give hand-computed values", T, float, double) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {1, 2, 3, 4}, {4});
  NDArray b = make<T>(m, {0.5, -1, 2, 8}, {4});
  CHECK(a.add(b).dtype() == dtype_of<T>);
  check_values(a.add(b), {1.5, 1, 5, 12});
  check_values(a.sub(b), {0.5, 3, 1, -4});
  check_values(a.mul(b), {0.5, -2, 6, 32});
  check_values(a.div(b), {2, -2, 1.5, 0.5});
  check_values(a.pow(b), {1, 0.5, 9, 65536});
  check_values(a.maximum(b), {1, 2, 3, 8});
  check_values(a.minimum(b), {0.5, -1, 2, 4});
  check_values(a.div(make<T>(m, {0, 0, -0.0, 1}, {4})),
               {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(),
                -std::numeric_limits<double>::infinity(), 4});
}

TEST_CASE_TEMPLATE("binary ops on long float rows (Eigen path) match a plain loop", T, float, double) {
  NDManager m = fresh();
  const std::size_t n = 37;
  std::vector<double> x = test_data(n, 1), y = test_data(n, 2, 0.5, 3);
  for (double& v : x) v = static_cast<T>(v);
  for (double& v : y) v = static_cast<T>(v);
  NDArray a = make<T>(m, x, {std::int64_t(n)}), b = make<T>(m, y, {std::int64_t(n)});
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  auto each = [&](auto f) {
    std::vector<double> r(n);
    for (std::size_t i = 0; i < n; ++i) r[i] = f(x[i], y[i]);
    return r;
  };
  check_values(a.add(b), each([](double p, double q) { return p + q; }), tol);
  check_values(a.sub(b), each([](double p, double q) { return p - q; }), tol);
  check_values(a.mul(b), each([](double p, double q) { return p * q; }), tol);
  check_values(a.div(b), each([](double p, double q) { return p / q; }), tol);
  check_values(a.abs().pow(b), each([](double p, double q) { return std::pow(std::abs(p), q); }), tol);
  check_values(a.maximum(b), each([](double p, double q) { return std::max(p, q); }), tol);
  check_values(a.minimum(b), each([](double p, double q) { return std::min(p, q); }), tol);
}

TEST_CASE_TEMPLATE("binary ops on signed integers truncate, wrap and never trap", T, std::int32_t, std::int64_t) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {7, -7, 9, -8, 2, 0}, {6});
  NDArray b = make<T>(m, {2, 2, -4, -3, 10, 5}, {6});
  CHECK(a.add(b).dtype() == dtype_of<T>);
  check_values(a.add(b), {9, -5, 5, -11, 12, 5});
  check_values(a.sub(b), {5, -9, 13, -5, -8, -5});
  check_values(a.mul(b), {14, -14, -36, 24, 20, 0});
  check_values(a.div(b), {3, -3, -2, 2, 0, 0});  // truncation toward zero, as C++ and Java
  check_values(a.maximum(b), {7, 2, 9, -3, 10, 5});
  check_values(a.minimum(b), {2, -7, -4, -8, 2, 0});
  check_values(make<T>(m, {2, 3, -2, 1, -1, -1, 2, 5}, {8}).pow(make<T>(m, {10, 3, 3, -3, -3, -2, -1, 0}, {8})),
               {1024, 27, -8, 1, -1, 1, 0, 1});

  constexpr T kMax = std::numeric_limits<T>::max(), kMin = std::numeric_limits<T>::min();
  NDArray big = m.create(std::vector<T>{kMax, kMin, kMin});
  NDArray step = m.create(std::vector<T>{1, -1, -1});
  std::vector<T> sum = big.add(step).template to_vector<T>();
  CHECK(sum[0] == kMin);  // wraps instead of undefined behaviour
  CHECK(sum[1] == kMax);
  std::vector<T> quo = big.div(step).template to_vector<T>();
  CHECK(quo[1] == kMin);  // MIN / -1 wraps instead of raising SIGFPE
  CHECK(big.neg().template to_vector<T>()[1] == kMin);
}

TEST_CASE("binary ops on uint8 wrap modulo 256") {
  NDManager m = fresh();
  NDArray a = m.create(std::vector<std::uint8_t>{250, 3, 200, 17});
  NDArray b = m.create(std::vector<std::uint8_t>{10, 5, 2, 4});
  check_values(a.add(b), {4, 8, 202, 21});
  check_values(a.sub(b), {240, 254, 198, 13});
  check_values(a.mul(b), {196, 15, 144, 68});
  check_values(a.div(b), {25, 0, 100, 4});
  check_values(a.maximum(b), {250, 5, 200, 17});
  check_values(a.minimum(b), {10, 3, 2, 4});
  check_values(b.pow(m.create(std::vector<std::uint8_t>{2, 3, 8, 0})), {100, 125, 0, 1});
}

TEST_CASE("integer division by zero throws InvalidArgument, never SIGFPE") {
  NDManager m = fresh();
  NDArray a = m.create(std::vector<std::int32_t>{1, 2, 3});
  NDArray z = m.create(std::vector<std::int32_t>{1, 0, 1});
  NDArray l5 = m.create(std::vector<std::int64_t>{5}), l0 = m.create(std::vector<std::int64_t>{0});
  NDArray u5 = m.create(std::vector<std::uint8_t>{5});
  Footprint before(m);
  CHECK_THROWS_WITH_AS(a.div(z), doctest::Contains("division by zero"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.div(z), doctest::Contains("div"), InvalidArgument);
  CHECK_THROWS_AS(a.div(0.0), InvalidArgument);
  CHECK_THROWS_AS(z.rdiv(6.0), InvalidArgument);
  CHECK_THROWS_AS(6.0 / z, InvalidArgument);
  CHECK_THROWS_AS(l5.div(l0), InvalidArgument);
  CHECK_THROWS_AS(u5.div(0.0), InvalidArgument);
  before.check_unchanged();
  NDArray c = a.dup();
  CHECK_THROWS_AS(c.div_(z), InvalidArgument);
  CHECK_THROWS_AS(c.div_(0.0), InvalidArgument);
  CHECK_THROWS_AS(c /= 0.0, InvalidArgument);
  // Floats divide by zero as IEEE says.
  CHECK(std::isinf(m.create(std::vector<float>{1}).div(0.0).item<float>()));
}

// ---- broadcasting ------------------------------------------------------------

TEST_CASE_TEMPLATE("broadcasting follows NumPy: both sides, rank extension, scalars", T, float, double,
                   std::int32_t, std::int64_t) {
  NDManager m = fresh();
  auto plus = [](double p, double q) { return p + q; };
  auto minus = [](double p, double q) { return p - q; };

  NDArray col = make<T>(m, {1, 2, 3}, {3, 1});
  NDArray row = make<T>(m, {10, 20, 30, 40}, {1, 4});
  NDArray sum = col.add(row);
  check_shape(sum, {3, 4});
  check_values(sum, {11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});
  check_values(row.sub(col), {9, 19, 29, 39, 8, 18, 28, 38, 7, 17, 27, 37});

  NDArray mat = make<T>(m, {1, 2, 3, 4, 5, 6}, {2, 3});
  NDArray vec = make<T>(m, {10, 20, 30}, {3});
  check_shape(mat.add(vec), {2, 3});
  check_values(mat.add(vec), {11, 22, 33, 14, 25, 36});
  check_values(vec.sub(mat), {9, 18, 27, 6, 15, 24});

  NDArray scalar = m.create_scalar(T(5));
  check_shape(scalar, Shape{});
  check_shape(mat.mul(scalar), {2, 3});
  check_values(mat.mul(scalar), {5, 10, 15, 20, 25, 30});
  check_shape(scalar.sub(mat), {2, 3});
  check_values(scalar.sub(mat), {4, 3, 2, 1, 0, -1});
  check_shape(scalar.add(scalar), Shape{});
  CHECK(scalar.add(scalar).template item<T>() == T(10));

  // (2, 1, 3) against (4, 1): both sides stretch, rank extends on the left.
  std::vector<double> x = {1, 2, 3, 4, 5, 6}, y = {100, 200, 300, 400};
  NDArray bx = make<T>(m, x, {2, 1, 3}), by = make<T>(m, y, {4, 1});
  check_shape(bx.sub(by), {2, 4, 3});
  check_values(bx.sub(by), ref_broadcast(x, {2, 1, 3}, y, {4, 1}, {2, 4, 3}, minus));

  // Long rows with one side stride 0 exercise the (1, 0) and (0, 1) kernel paths.
  std::vector<double> u = test_data(3 * 16, 3, -50, 50), w = test_data(16, 4, -50, 50);
  for (double& v : u) v = static_cast<double>(static_cast<T>(v));
  for (double& v : w) v = static_cast<double>(static_cast<T>(v));
  NDArray bu = make<T>(m, u, {3, 16}), bw = make<T>(m, w, {16});
  NDArray bc = make<T>(m, {7, 8, 9}, {3, 1});
  check_values(bu.add(bw), ref_broadcast(u, {3, 16}, w, {16}, {3, 16}, plus));
  check_values(bw.sub(bu), ref_broadcast(w, {16}, u, {3, 16}, {3, 16}, minus));
  check_values(bc.sub(bu), ref_broadcast({7, 8, 9}, {3, 1}, u, {3, 16}, {3, 16}, minus));
  check_values(bu.sub(bc), ref_broadcast(u, {3, 16}, {7, 8, 9}, {3, 1}, {3, 16}, minus));

  // Length-0 axes broadcast too.
  NDArray empty = m.zeros({0, 3}, dtype_of<T>);
  check_shape(empty.add(vec), {0, 3});
  check_shape(make<T>(m, {1}, {1, 1}).add(m.zeros({2, 0}, dtype_of<T>)), {2, 0});
}

TEST_CASE("shapes that do not broadcast throw ShapeMismatch naming the op and both shapes") {
  NDManager m = fresh();
  NDArray a = m.ones({2, 3}), b = m.ones({4}), c = m.ones({3, 2}), e = m.ones({0});
  Footprint before(m);
  CHECK_THROWS_WITH_AS(a.add(b), doctest::Contains("add: shapes (2, 3) and (4,) do not broadcast"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.mul(c), doctest::Contains("mul: shapes (2, 3) and (3, 2)"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.gt(c), doctest::Contains("gt"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.maximum(b), doctest::Contains("maximum"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.pow(e), doctest::Contains("(0,)"), ShapeMismatch);
  a.set_name("weights");
  CHECK_THROWS_WITH_AS(a.sub(b), doctest::Contains("'weights'"), ShapeMismatch);
  before.check_unchanged();
}

// ---- dtype rules ---------------------------------------------------------------

TEST_CASE("binary ops need equal dtypes and numeric operands") {
  NDManager m = fresh();
  NDArray f = m.ones({2}), d = m.ones({2}, DataType::float64), i = m.ones({2}, DataType::int32);
  NDArray flag = m.ones({2}, DataType::boolean);
  Footprint before(m);
  CHECK_THROWS_WITH_AS(f.add(d), doctest::Contains("add: dtypes differ"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(f.add(d), doctest::Contains("float64"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(i.mul(f), doctest::Contains("int32"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(f.eq(i), doctest::Contains("eq"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(flag.add(flag), doctest::Contains("add"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(flag.add(flag), doctest::Contains("boolean"), DTypeMismatch);
  CHECK_THROWS_AS(flag.mul(2.0), DTypeMismatch);
  CHECK_THROWS_AS(flag.rsub(1.0), DTypeMismatch);
  CHECK_THROWS_WITH_AS(flag.neg(), doctest::Contains("neg"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(i.exp(), doctest::Contains("exp"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(i.exp(), doctest::Contains("needs a floating dtype"), DTypeMismatch);
  CHECK_THROWS_AS(i.log(), DTypeMismatch);
  CHECK_THROWS_AS(i.sqrt(), DTypeMismatch);
  CHECK_THROWS_AS(i.sigmoid(), DTypeMismatch);
  CHECK_THROWS_AS(i.tanh(), DTypeMismatch);
  CHECK_THROWS_AS(flag.exp(), DTypeMismatch);
  before.check_unchanged();
  NDArray j = i.dup();
  CHECK_THROWS_WITH_AS(j.add_(f), doctest::Contains("add_"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(j.exp_(), doctest::Contains("exp"), DTypeMismatch);
  CHECK_THROWS_AS(flag.dup().add_(1.0), DTypeMismatch);
  CHECK(values(j) == std::vector<double>{1, 1});
  // Booleans compare and take maximum/minimum (logical or/and).
  NDArray t = make_bool(m, {1, 0, 1, 0}, {4}), u = make_bool(m, {1, 1, 0, 0}, {4});
  CHECK(t.eq(u).dtype() == DataType::boolean);
  check_values(t.eq(u), {1, 0, 0, 1});
  check_values(t.maximum(u), {1, 1, 1, 0});
  check_values(t.minimum(u), {1, 0, 0, 0});
  CHECK(t.maximum(u).dtype() == DataType::boolean);
}

// ---- scalar operands -------------------------------------------------------------

TEST_CASE_TEMPLATE("scalar overloads, rsub and rdiv", T, float, double) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {1, 2, 4, -8}, {2, 2});
  check_shape(a.add(1.5), {2, 2});
  CHECK(a.add(1.5).dtype() == dtype_of<T>);
  check_values(a.add(1.5), {2.5, 3.5, 5.5, -6.5});
  check_values(a.sub(1), {0, 1, 3, -9});
  check_values(a.rsub(1), {0, -1, -3, 9});
  check_values(a.mul(-2), {-2, -4, -8, 16});
  check_values(a.div(4), {0.25, 0.5, 1, -2});
  check_values(a.rdiv(4), {4, 2, 1, -0.5});
  check_values(a.pow(2), {1, 4, 16, 64});
  check_values(a.maximum(1.5), {1.5, 2, 4, 1.5});
  check_values(a.minimum(1.5), {1, 1.5, 1.5, -8});
  // Long rows take the Eigen path with a constant operand.
  std::vector<double> x = test_data(20, 5);
  for (double& v : x) v = static_cast<T>(v);
  NDArray b = make<T>(m, x, {20});
  std::vector<double> want(20);
  for (std::size_t i = 0; i < 20; ++i) want[i] = 3 - x[i];
  check_values(b.rsub(3), want, 1e-6);
  for (std::size_t i = 0; i < 20; ++i) want[i] = 3 / x[i];
  check_values(b.rdiv(3), want, 1e-5);
  for (std::size_t i = 0; i < 20; ++i) want[i] = x[i] * x[i];
  check_values(b.pow(2), want, 1e-5);
}

TEST_CASE_TEMPLATE("x ^ 2 is the product x * x, bit for bit, on long rows and strided ones", T, float, double) {
  NDManager m = fresh();
  std::vector<double> x = test_data(40, 11);
  for (double& v : x) v = static_cast<T>(v * 37.1);
  NDArray a = make<T>(m, x, {40});
  const NDArray product = a.mul(a);
  CHECK(bits(a.pow(2)) == bits(product));                                    // a scalar exponent
  CHECK(bits(a.pow(make<T>(m, {2}, {1}))) == bits(product));                 // a broadcast one
  const NDArray strided = a.get(NDIndex().add_slice(0, 40, 2));              // the element loop's std::pow
  CHECK(bits(strided.pow(2)) == bits(strided.mul(strided)));
  check_values(a.pow(3), [&] {
    std::vector<double> cubes;
    for (double v : x) cubes.push_back(v * v * v);
    return cubes;
  }(), 1e-4);  // another exponent keeps pow
}

TEST_CASE_TEMPLATE("scalar operands on integer arrays take the array's dtype", T, std::int32_t, std::int64_t,
                   std::uint8_t) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {1, 2, 3, 10}, {4});
  CHECK(a.add(2.0).dtype() == dtype_of<T>);
  check_values(a.add(2), {3, 4, 5, 12});
  check_values(a.mul(3), {3, 6, 9, 30});
  check_values(a.div(2), {0, 1, 1, 5});
  check_values(a.rsub(20), {19, 18, 17, 10});
  check_values(a.rdiv(20), {20, 10, 6, 2});
  check_values(a.pow(2), {1, 4, 9, 100});
  check_values(a.maximum(2), {2, 2, 3, 10});
  check_values(a.minimum(2), {1, 2, 2, 2});
}

// ---- comparisons -------------------------------------------------------------------

TEST_CASE_TEMPLATE("comparisons give boolean arrays", T, float, double, std::int32_t, std::int64_t, std::uint8_t) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {1, 2, 3, 4}, {4});
  NDArray b = make<T>(m, {4, 2, 1, 4}, {4});
  for (NDArray r : {a.eq(b), a.ne(b), a.gt(b), a.ge(b), a.lt(b), a.le(b), a.eq(2), a.lt(3)})
    CHECK(r.dtype() == DataType::boolean);
  check_values(a.eq(b), {0, 1, 0, 1});
  check_values(a.ne(b), {1, 0, 1, 0});
  check_values(a.gt(b), {0, 0, 1, 0});
  check_values(a.ge(b), {0, 1, 1, 1});
  check_values(a.lt(b), {1, 0, 0, 0});
  check_values(a.le(b), {1, 1, 0, 1});
  check_values(a.eq(2), {0, 1, 0, 0});
  check_values(a.ne(2), {1, 0, 1, 1});
  check_values(a.gt(2), {0, 0, 1, 1});
  check_values(a.ge(2), {0, 1, 1, 1});
  check_values(a.lt(2), {1, 0, 0, 0});
  check_values(a.le(2), {1, 1, 0, 0});
  // Broadcasting: (4) against (2, 1).
  NDArray c = make<T>(m, {2, 3}, {2, 1});
  check_shape(a.ge(c), {2, 4});
  check_values(a.ge(c), {0, 1, 1, 1, 0, 0, 1, 1});
  // Long rows (the Eigen comparison path for floats).
  std::vector<double> x(24), y(24);
  for (int i = 0; i < 24; ++i) x[std::size_t(i)] = i % 5, y[std::size_t(i)] = i % 3;
  NDArray lx = make<T>(m, x, {24}), ly = make<T>(m, y, {24});
  std::vector<double> want(24);
  for (std::size_t i = 0; i < 24; ++i) want[i] = x[i] < y[i];
  check_values(lx.lt(ly), want);
  for (std::size_t i = 0; i < 24; ++i) want[i] = x[i] == 2;
  check_values(lx.eq(2), want);
}

TEST_CASE_TEMPLATE("integer arrays compare exactly with scalars they cannot hold", T, std::int32_t, std::int64_t,
                   std::uint8_t) {
  // NumPy compares 2 < 2.5 as true: the scalar is not truncated to the array's dtype first.
  NDManager m = fresh();
  NDArray a = make<T>(m, {1, 2, 3}, {3});
  check_values(a.lt(2.5), {1, 1, 0});
  check_values(a.le(2.5), {1, 1, 0});
  check_values(a.gt(2.5), {0, 0, 1});
  check_values(a.ge(2.5), {0, 0, 1});
  check_values(a.eq(2.5), {0, 0, 0});
  check_values(a.ne(2.5), {1, 1, 1});
  check_values(a.gt(-1), {1, 1, 1});
  check_values(a.lt(1e6), {1, 1, 1});
  check_values(a.eq(1e6), {0, 0, 0});
  check_values(a.ge(-0.5), {1, 1, 1});
  check_values(a.eq(std::nan("")), {0, 0, 0});
  check_values(a.ne(std::nan("")), {1, 1, 1});
  check_values(a.lt(std::numeric_limits<double>::infinity()), {1, 1, 1});
  check_values(a.gt(-std::numeric_limits<double>::infinity()), {1, 1, 1});
  // Scalars the dtype holds still compare exactly.
  check_values(a.eq(2), {0, 1, 0});
  check_values(a.ge(3), {0, 0, 1});
}

TEST_CASE("comparisons with NaN are false, but ne") {
  NDManager m = fresh();
  const double nan = std::nan("");
  NDArray a = m.create(std::vector<double>{nan, 1, 2});
  NDArray b = m.create(std::vector<double>{nan, nan, 2});
  check_values(a.eq(b), {0, 0, 1});
  check_values(a.ne(b), {1, 1, 0});
  check_values(a.lt(b), {0, 0, 0});
  check_values(a.ge(b), {0, 0, 1});
  check_values(a.eq(nan), {0, 0, 0});
  check_values(a.ne(nan), {1, 1, 1});
  // maximum and minimum propagate NaN, as NumPy's do.
  check_values(a.maximum(b), {nan, nan, 2});
  check_values(b.minimum(a), {nan, nan, 2});
  check_values(a.maximum(5), {nan, 5, 5});
}

TEST_CASE("booleans compare with scalars as 0 and 1") {
  NDManager m = fresh();
  NDArray t = make_bool(m, {1, 0}, {2});
  check_values(t.eq(1), {1, 0});
  check_values(t.eq(0), {0, 1});
  check_values(t.eq(2), {0, 0});  // true is 1, not 2
  check_values(t.lt(0.5), {0, 1});
}

// ---- where -----------------------------------------------------------------------------

TEST_CASE_TEMPLATE("where picks x where the condition holds, y elsewhere, broadcasting", T, float, double,
                   std::int32_t, std::int64_t, std::uint8_t) {
  NDManager m = fresh();
  NDArray x = make<T>(m, {1, 2, 3, 4}, {4});
  NDArray y = make<T>(m, {10, 20, 30, 40}, {4});
  NDArray c = make_bool(m, {1, 0, 0, 1}, {4});
  NDArray r = where(c, x, y);
  CHECK(r.dtype() == dtype_of<T>);
  check_values(r, {1, 20, 30, 4});
  check_values(where(x.gt(2), x, y), {10, 20, 3, 4});
  // Condition (3, 1), x (1, 4), y () → (3, 4).
  NDArray cond = make_bool(m, {1, 0, 1}, {3, 1});
  NDArray xs = make<T>(m, {1, 2, 3, 4}, {1, 4});
  NDArray ys = m.create_scalar(T(9));
  NDArray w = where(cond, xs, ys);
  check_shape(w, {3, 4});
  check_values(w, {1, 2, 3, 4, 9, 9, 9, 9, 1, 2, 3, 4});
  // The condition alone may have the largest shape.
  check_shape(where(make_bool(m, {1, 0, 1, 0, 1, 0}, {2, 3}), m.create_scalar(T(1)), m.create_scalar(T(0))),
              {2, 3});
}

TEST_CASE("where rejects bad conditions, dtypes and shapes") {
  NDManager m = fresh();
  NDArray x = m.ones({4}), y = m.zeros({4});
  NDArray c = x.gt(0.5), y64 = y.to_type(DataType::float64);
  Footprint before(m);
  CHECK_THROWS_WITH_AS(where(x, x, y), doctest::Contains("where: the condition"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(where(x, x, y), doctest::Contains("must be boolean"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(where(c, x, y64), doctest::Contains("where"), DTypeMismatch);
  before.check_unchanged();
  CHECK_THROWS_WITH_AS(where(c, x, m.zeros({3})), doctest::Contains("(3,)"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(where(m.ones({3}).gt(0), x, y), doctest::Contains("where"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(where(m.ones({3}).gt(0), x, y), doctest::Contains("(3,)"), ShapeMismatch);
  CHECK_THROWS_AS(where(NDArray(), x, y), InvalidArgument);
  CHECK_THROWS_AS(where(c, x, NDArray()), InvalidArgument);
}

// ---- unary --------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("unary functions match <cmath> on contiguous and strided inputs", T, float, double) {
  NDManager m = fresh();
  const double tol = std::is_same_v<T, float> ? 2e-6 : 1e-12;
  std::vector<double> x = test_data(6 * 10, 7, -3, 3);  // long rows: the Eigen path
  for (double& v : x) v = static_cast<T>(v);
  NDArray a = make<T>(m, x, {6, 10});
  NDArray at = a.transpose();  // strided: the typed loop
  using F = double (*)(double);
  struct Case {
    const char* name;
    NDArray (NDArray::*op)(Site) const;
    F f;
    bool positive;  // needs x > 0
  };
  const Case cases[] = {
      {"neg", &NDArray::neg, [](double v) { return -v; }, false},
      {"abs", &NDArray::abs, [](double v) { return std::abs(v); }, false},
      {"exp", &NDArray::exp, [](double v) { return std::exp(v); }, false},
      {"log", &NDArray::log, [](double v) { return std::log(v); }, true},
      {"sqrt", &NDArray::sqrt, [](double v) { return std::sqrt(v); }, true},
      {"square", &NDArray::square, [](double v) { return v * v; }, false},
      {"relu", &NDArray::relu, [](double v) { return v > 0 ? v : 0.0; }, false},
      {"sigmoid", &NDArray::sigmoid, [](double v) { return 1 / (1 + std::exp(-v)); }, false},
      {"tanh", &NDArray::tanh, [](double v) { return std::tanh(v); }, false},
  };
  NDArray pos = a.abs().add(0.25), pos_t = pos.transpose();
  std::vector<double> xp = x;
  for (double& v : xp) v = static_cast<T>(std::abs(v) + 0.25);
  for (const Case& c : cases) {
    INFO(c.name);
    const std::vector<double>& src = c.positive ? xp : x;
    auto want = [&](bool transposed) {
      std::vector<double> r(src.size());
      for (std::int64_t i = 0; i < 60; ++i) r[std::size_t(i)] = c.f(src[std::size_t(transposed ? (i % 6) * 10 + i / 6 : i)]);
      return r;
    };
    NDArray in = c.positive ? pos : a, in_t = c.positive ? pos_t : at;
    NDArray r = (in.*c.op)(Site::current());
    CHECK(r.dtype() == dtype_of<T>);
    check_shape(r, {6, 10});
    check_values(r, want(false), tol);
    NDArray rt = (in_t.*c.op)(Site::current());
    check_shape(rt, {10, 6});
    check_values(rt, want(true), tol);
  }
  // Special values.
  NDArray s = make<T>(m, {0, -1, 1000, -1000}, {4});
  check_values(s.log(), {-std::numeric_limits<double>::infinity(), std::nan(""), std::log(1000.0), std::nan("")},
               1e-6);
  check_values(s.sqrt().get("0"), {0});
  check_values(s.sigmoid(), {0.5, 1 / (1 + std::exp(1.0)), 1, 0}, 1e-6);
  check_values(s.tanh(), {0, std::tanh(-1.0), 1, -1}, 1e-6);
  check_values(s.exp().get("2:"), {std::numeric_limits<double>::infinity(), 0});
}

TEST_CASE_TEMPLATE("unary functions on integers: neg, abs, square, relu", T, std::int32_t, std::int64_t) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {-3, 0, 4, -1}, {2, 2});
  check_values(a.neg(), {3, 0, -4, 1});
  check_values(a.abs(), {3, 0, 4, 1});
  check_values(a.square(), {9, 0, 16, 1});
  check_values(a.relu(), {0, 0, 4, 0});
  check_values(a.transpose().relu(), {0, 4, 0, 0});
  CHECK(a.relu().dtype() == dtype_of<T>);
}

// ---- in place -------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("in-place binary ops return the same handle and write into the array", T, float, double,
                   std::int32_t) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {1, 2, 3, 4, 5, 6}, {2, 3});
  NDArray alias = a;
  NDArray& r = a.add_(make<T>(m, {10, 20, 30}, {3}));
  CHECK(&r == &a);
  CHECK(r.same(alias));
  check_values(alias, {11, 22, 33, 14, 25, 36});
  a.sub_(make<T>(m, {1, 2}, {2, 1}));
  check_values(a, {10, 21, 32, 12, 23, 34});
  a.mul_(m.create_scalar(T(2)));
  check_values(a, {20, 42, 64, 24, 46, 68});
  a.div_(make<T>(m, {2, 2, 2, 4, 2, 4}, {2, 3}));
  check_values(a, {10, 21, 32, 6, 23, 17});
  a.maximum_(make<T>(m, {15, 15, 15}, {3}));
  check_values(a, {15, 21, 32, 15, 23, 17});
  a.minimum_(make<T>(m, {20, 30, 30}, {3}));
  check_values(a, {15, 21, 30, 15, 23, 17});
  NDArray p = make<T>(m, {2, 3}, {2});
  p.pow_(make<T>(m, {3, 2}, {2}));
  check_values(p, {8, 9});

  CHECK(&a.add_(1.0) == &a);
  check_values(a, {16, 22, 31, 16, 24, 18});
  a.sub_(1).mul_(2).div_(2);
  check_values(a, {15, 21, 30, 15, 23, 17});
  a.maximum_(20).minimum_(25);
  check_values(a, {20, 21, 25, 20, 23, 20});
  p.pow_(2);
  check_values(p, {64, 81});
}

TEST_CASE("in-place ops write through views into the shared storage") {
  NDManager m = fresh();
  NDArray base = m.arange(0, 12).reshape({3, 4});
  NDArray row = base.get("1");
  CHECK(row.shares_storage(base));
  row.add_(100);
  NDArray col = base.get(":, 2");
  col.mul_(m.create(std::vector<float>{-1, -1, -1}));
  NDArray t = base.transpose();
  t.get("0").neg_();  // column 0 of base
  check_values(base, {-0, 1, -2, 3, -104, 105, -106, 107, -8, 9, -10, 11});
  base.get("::2, 1::2").fill_(7);
  check_values(base, {-0, 7, -2, 7, -104, 105, -106, 107, -8, 7, -10, 7});
  base.get("2").assign_(m.create(std::vector<float>{1, 2, 3, 4}));
  check_values(base.get("2"), {1, 2, 3, 4});
  base.get("0").assign_(m.create_scalar(5.0f));
  check_values(base.get("0"), {5, 5, 5, 5});
  base.get(":, 0").abs_();
  check_values(base.get(":, 0"), {5, 104, 1});
  base.relu_();
  check_values(base, {5, 5, 5, 5, 104, 105, 0, 107, 1, 2, 3, 4});
}

TEST_CASE("in-place ops read a copy when the source overlaps the destination") {
  NDManager m = fresh();
  // a[1:] -= a[:-1] with the original values: a NumPy user expects [1, 1, 2, 3].
  NDArray a = m.create(std::vector<float>{1, 2, 4, 7});
  a.get("1:").sub_(a.get(":-1"));
  check_values(a, {1, 1, 2, 3});
  // A square matrix plus its own transpose.
  NDArray s = m.create(std::vector<double>{1, 2, 3, 4}, {2, 2});
  s.add_(s.transpose());
  check_values(s, {2, 5, 5, 8});
  // The identical view is fine: a += a.
  NDArray d = m.create(std::vector<std::int32_t>{1, 2, 3});
  d.add_(d);
  check_values(d, {2, 4, 6});
  // assign_ from an overlapping view of itself.
  NDArray e = m.create(std::vector<float>{1, 2, 3, 4});
  e.get("1:").assign_(e.get(":3"));
  check_values(e, {1, 1, 2, 3});
}

TEST_CASE("in-place unary ops on every element and their handles") {
  NDManager m = fresh();
  NDArray a = m.create(std::vector<double>{-1, 0, 4});
  CHECK(&a.neg_() == &a);
  check_values(a, {1, 0, -4});
  CHECK(&a.abs_() == &a);
  check_values(a, {1, 0, 4});
  CHECK(&a.sqrt_() == &a);
  check_values(a, {1, 0, 2});
  CHECK(&a.exp_() == &a);
  check_values(a, {std::exp(1.0), 1, std::exp(2.0)});
  CHECK(&a.log_() == &a);
  check_values(a, {1, 0, 2});
  CHECK(&a.sigmoid_() == &a);
  check_values(a, {1 / (1 + std::exp(-1.0)), 0.5, 1 / (1 + std::exp(-2.0))});
  CHECK(&a.tanh_() == &a);
  CHECK(&a.relu_() == &a);
  CHECK(&a.fill_(-3) == &a);
  check_values(a, {-3, -3, -3});
  NDArray i = m.create(std::vector<std::int64_t>{-2, 5});
  i.neg_().relu_();
  check_values(i, {2, 0});
  i.fill_(3.9);
  check_values(i, {3, 3});
}

TEST_CASE("in-place ops reject destinations they cannot write") {
  NDManager m = fresh();
  NDArray a = m.ones({3});
  CHECK_THROWS_WITH_AS(a.add_(m.ones({2, 3})), doctest::Contains("add_"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.mul_(m.ones({2})), doctest::Contains("(2,)"), ShapeMismatch);
  NDArray b = m.ones({1, 3}).broadcast_to({4, 3});
  CHECK_THROWS_WITH_AS(b.add_(1.0), doctest::Contains("broadcast view"), InvalidArgument);
  CHECK_THROWS_WITH_AS(b.sub_(m.ones({4, 3})), doctest::Contains("sub_"), InvalidArgument);
  CHECK_THROWS_AS(b.exp_(), InvalidArgument);
  CHECK_THROWS_AS(b.fill_(0), InvalidArgument);
  CHECK_THROWS_AS(b.assign_(m.ones({4, 3})), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.assign_(m.ones({2})), doctest::Contains("assign_"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.assign_(m.ones({3}, DataType::int32)), doctest::Contains("assign_"), DTypeMismatch);
  CHECK(values(a) == std::vector<double>{1, 1, 1});
}

// ---- misc ------------------------------------------------------------------------------------

TEST_CASE("element-wise ops on empty and scalar arrays") {
  NDManager m = fresh();
  NDArray e = m.zeros({0});
  check_shape(e.add(e), {0});
  check_shape(e.exp(), {0});
  check_shape(e.gt(1), {0});
  CHECK(e.mul_(2.0).size() == 0);
  NDArray s = m.create_scalar(4.0);
  CHECK(s.sqrt().item<double>() == 2.0);
  check_shape(s.sqrt(), Shape{});
}

TEST_CASE("element-wise ops on non-contiguous operands of every rank") {
  NDManager m = fresh();
  std::vector<double> x = test_data(2 * 3 * 4 * 5, 11);
  NDArray a = m.create(x, {2, 3, 4, 5});
  NDArray p = a.permute({3, 1, 0, 2});  // (5, 3, 2, 4)
  NDArray q = a.get("..., ::2");         // (2, 3, 4, 3)
  // p + p.dup() doubles the permuted array; compare in its own order.
  std::vector<double> want(x.size());
  for (std::int64_t i = 0; i < 120; ++i) {
    auto idx = unravel(i, {5, 3, 2, 4});
    std::int64_t src = ((idx[2] * 3 + idx[1]) * 4 + idx[3]) * 5 + idx[0];
    want[std::size_t(i)] = 2 * x[std::size_t(src)];
  }
  check_values(p.add(p.dup()), want, 1e-12);
  std::vector<double> wq;
  for (std::int64_t i = 0; i < 120; ++i)
    if (i % 5 % 2 == 0) wq.push_back(x[std::size_t(i)] * 3);
  check_values(q.mul(3), wq, 1e-12);
  check_values(q.mul(m.full({3}, 3, DataType::float64)), wq, 1e-12);
}

namespace ndgc {

TEST_CASE_TEMPLATE("math functions (floor .. erf): each element as the standard library's, contiguous and strided",
                   T, float, double) {
  NDManager m = NDManager::new_base_manager("math");
  const double tol = std::is_same_v<T, float> ? 3e-6 : 1e-12;
  using F = double (*)(double);
  struct Case {
    const char* name;
    NDArray (NDArray::*op)(Site) const;
    F f;
    double low, high;  // the domain sampled
  };
  const Case cases[] = {
      {"floor", &NDArray::floor, [](double v) { return std::floor(v); }, -3, 3},
      {"ceil", &NDArray::ceil, [](double v) { return std::ceil(v); }, -3, 3},
      {"round", &NDArray::round, [](double v) { return std::nearbyint(v); }, -3, 3},
      {"sin", &NDArray::sin, [](double v) { return std::sin(v); }, -3, 3},
      {"cos", &NDArray::cos, [](double v) { return std::cos(v); }, -3, 3},
      {"tan", &NDArray::tan, [](double v) { return std::tan(v); }, -1.2, 1.2},
      {"asin", &NDArray::asin, [](double v) { return std::asin(v); }, -0.9, 0.9},
      {"acos", &NDArray::acos, [](double v) { return std::acos(v); }, -0.9, 0.9},
      {"atan", &NDArray::atan, [](double v) { return std::atan(v); }, -3, 3},
      {"sinh", &NDArray::sinh, [](double v) { return std::sinh(v); }, -3, 3},
      {"cosh", &NDArray::cosh, [](double v) { return std::cosh(v); }, -3, 3},
      {"asinh", &NDArray::asinh, [](double v) { return std::asinh(v); }, -3, 3},
      {"acosh", &NDArray::acosh, [](double v) { return std::acosh(v); }, 1.1, 3},
      {"atanh", &NDArray::atanh, [](double v) { return std::atanh(v); }, -0.9, 0.9},
      {"erf", &NDArray::erf, [](double v) { return std::erf(v); }, -3, 3},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    std::vector<T> x(48);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = T(c.low + (c.high - c.low) * double(i * 29 % 48) / 47.0);
    NDArray a = m.create<T>(x, Shape{6, 8});
    for (bool strided : {false, true}) {
      NDArray in = strided ? a.transpose() : a;
      const std::vector<T> got = (in.*c.op)(Site::current()).template to_vector<T>();
      const std::vector<T> src = in.template to_vector<T>();
      REQUIRE(got.size() == src.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        const double want = c.f(double(src[i]));
        CHECK(std::abs(double(got[i]) - want) <= tol * std::max(1.0, std::abs(want)));
      }
    }
  }
}

TEST_CASE("round is half to even; the math functions refuse integers, naming the op") {
  NDManager m = NDManager::new_base_manager("math");
  CHECK(m.create<double>({0.5, 1.5, 2.5, -0.5, -2.5, 2.4}).round().to_vector<double>() ==
        std::vector<double>{0, 2, 2, -0.0, -2, 2});
  CHECK_THROWS_WITH_AS(m.arange(0, 3, 1, DataType::int32).sin(), doctest::Contains("sin:"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(m.arange(0, 3, 1, DataType::int64).floor(), doctest::Contains("floor:"), DTypeMismatch);
}

}  // namespace ndgc
