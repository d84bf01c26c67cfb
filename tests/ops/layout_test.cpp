// Tests src/ops/layout.cpp: dup, contiguous, to_type (saturating float →
// integer, NaN → 0, → boolean is != 0), concat and stack along every axis,
// with strided inputs, mixed lengths along the join axis and every error.
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops_test_util.hpp"

using namespace ndgc;
using namespace ops_test;

// ---- dup and contiguous --------------------------------------------------------

TEST_CASE_TEMPLATE("dup makes an independent contiguous copy", T, float, double, std::int32_t, std::int64_t,
                   std::uint8_t) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {1, 2, 3, 4, 5, 6}, {2, 3});
  NDArray d = a.dup();
  CHECK_FALSE(d.same(a));
  CHECK_FALSE(d.shares_storage(a));
  CHECK(d.dtype() == dtype_of<T>);
  check_shape(d, {2, 3});
  check_values(d, {1, 2, 3, 4, 5, 6});
  d.fill_(9);
  check_values(a, {1, 2, 3, 4, 5, 6});
  CHECK(d.manager().uid() == a.manager().uid());
  NDArray t = a.transpose().dup();
  CHECK(t.is_contiguous());
  check_shape(t, {3, 2});
  check_values(t, {1, 4, 2, 5, 3, 6});
  check_values(a.get(":, ::2").dup(), {1, 3, 4, 6});
}

TEST_CASE("contiguous returns the array itself when it already is contiguous") {
  NDManager m = fresh();
  NDArray a = m.arange(0, 6).reshape({2, 3});
  CHECK(a.contiguous().same(a));
  NDArray row = a.get("1");
  CHECK(row.contiguous().same(row));
  NDArray t = a.transpose();
  NDArray c = t.contiguous();
  CHECK_FALSE(c.same(t));
  CHECK_FALSE(c.shares_storage(a));
  CHECK(c.is_contiguous());
  check_values(c, {0, 3, 1, 4, 2, 5});
  CHECK(m.ones({1}).broadcast_to({3}).contiguous().strides() == Shape{1});
}

// ---- to_type ----------------------------------------------------------------------

TEST_CASE("to_type from floats to integers truncates, saturates and maps NaN to 0") {
  NDManager m = fresh();
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  NDArray f = m.create(std::vector<float>{1.7f, -1.7f, 2.5f, -0.5f, float(nan), 1e10f, -1e10f, float(inf),
                                          float(-inf)});
  NDArray i = f.to_type(DataType::int32);
  CHECK(i.dtype() == DataType::int32);
  CHECK(i.to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{1, -1, 2, 0, 0, std::numeric_limits<std::int32_t>::max(),
                                  std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max(),
                                  std::numeric_limits<std::int32_t>::min()});
  NDArray d = m.create(std::vector<double>{-5, 300, 255.9, 3.2, nan, 1e300});
  CHECK(d.to_type(DataType::uint8).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{0, 255, 255, 3, 0, 255});
  NDArray big = m.create(std::vector<double>{1e300, -1e300, 9.3e18, -9.3e18, 4611686018427387904.0, -inf});
  CHECK(big.to_type(DataType::int64).to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min(),
                                  std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min(),
                                  std::int64_t(1) << 62, std::numeric_limits<std::int64_t>::min()});
  // to_vector converts the same way.
  CHECK(f.to_vector<std::int32_t>()[4] == 0);
  CHECK(d.to_vector<std::uint8_t>()[1] == 255);
}

TEST_CASE("to_type to boolean is != 0; from boolean is 0 or 1") {
  NDManager m = fresh();
  NDArray f = m.create(std::vector<double>{0, -0.0, 0.5, std::nan(""), -3});
  NDArray b = f.to_type(DataType::boolean);
  CHECK(b.dtype() == DataType::boolean);
  check_values(b, {0, 0, 1, 1, 1});
  check_values(m.create(std::vector<std::int32_t>{0, 7, -1}).to_type(DataType::boolean), {0, 1, 1});
  check_values(m.create(std::vector<std::uint8_t>{0, 128}).to_type(DataType::boolean), {0, 1});
  NDArray t = make_bool(m, {1, 0, 1}, {3});
  CHECK(t.to_type(DataType::float32).to_vector<float>() == std::vector<float>{1, 0, 1});
  CHECK(t.to_type(DataType::int64).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 0, 1});
  CHECK(t.to_type(DataType::uint8).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{1, 0, 1});
}

TEST_CASE("to_type between integers and to floats") {
  NDManager m = fresh();
  NDArray i = m.create(std::vector<std::int32_t>{-1, 300, 7});
  CHECK(i.to_type(DataType::uint8).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{255, 44, 7});  // modulo 256
  CHECK(i.to_type(DataType::int64).to_vector<std::int64_t>() == std::vector<std::int64_t>{-1, 300, 7});
  CHECK(i.to_type(DataType::float32).to_vector<float>() == std::vector<float>{-1, 300, 7});
  NDArray l = m.create(std::vector<std::int64_t>{(std::int64_t(1) << 53), -(std::int64_t(1) << 40), 5});
  CHECK(l.to_type(DataType::float64).to_vector<double>() == std::vector<double>{0x1p53, -0x1p40, 5});
  CHECK(l.to_type(DataType::int32).to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 0, 5});
  NDArray u = m.create(std::vector<std::uint8_t>{200, 0});
  CHECK(u.to_type(DataType::int32).to_vector<std::int32_t>() == std::vector<std::int32_t>{200, 0});
  NDArray d = m.create(std::vector<double>{0.1, 1e40});
  std::vector<float> f = d.to_type(DataType::float32).to_vector<float>();
  CHECK(f[0] == 0.1f);
  CHECK(std::isinf(f[1]));
  CHECK(m.create(std::vector<float>{0.1f}).to_type(DataType::float64).item<double>() == double(0.1f));
}

TEST_CASE("to_type copies, keeps the shape and reads views in their order") {
  NDManager m = fresh();
  NDArray a = m.arange(0, 6).reshape({2, 3});
  NDArray same = a.to_type(DataType::float32);
  CHECK_FALSE(same.shares_storage(a));
  NDArray t = a.transpose().to_type(DataType::int32);
  check_shape(t, {3, 2});
  CHECK(t.is_contiguous());
  CHECK(t.to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 3, 1, 4, 2, 5});
  check_values(a.get("1").broadcast_to({2, 3}).to_type(DataType::float64), {3, 4, 5, 3, 4, 5});
  check_shape(m.zeros({0, 2}).to_type(DataType::int64), {0, 2});
  check_shape(m.create_scalar(2.5).to_type(DataType::int32), Shape{});
}

// ---- concat ---------------------------------------------------------------------------

TEST_CASE_TEMPLATE("concat along every axis", T, float, double, std::int32_t, std::int64_t, std::uint8_t) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {1, 2, 3, 4, 5, 6}, {2, 3});
  NDArray b = make<T>(m, {7, 8, 9, 10, 11, 12}, {2, 3});
  NDArray c0 = a.concat(b);
  CHECK(c0.dtype() == dtype_of<T>);
  check_shape(c0, {4, 3});
  check_values(c0, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  NDArray c1 = a.concat(b, 1);
  check_shape(c1, {2, 6});
  check_values(c1, {1, 2, 3, 7, 8, 9, 4, 5, 6, 10, 11, 12});
  check_values(a.concat(b, -1), values(c1));
  check_values(a.concat(b, -2), values(c0));
  CHECK_FALSE(c0.shares_storage(a));
  // Different lengths along the join axis, three inputs, the free function.
  NDArray col = make<T>(m, {20, 21}, {2, 1});
  NDArray wide = concat(NDList{a, col, b}, 1);
  check_shape(wide, {2, 7});
  check_values(wide, {1, 2, 3, 20, 7, 8, 9, 4, 5, 6, 21, 10, 11, 12});
  check_values(concat(NDList{a}, 0), {1, 2, 3, 4, 5, 6});
  // An empty part contributes nothing.
  NDArray none = m.zeros({0, 3}, dtype_of<T>);
  check_values(concat(NDList{none, a, none}, 0), {1, 2, 3, 4, 5, 6});
  // 1-D.
  check_values(make<T>(m, {1, 2}, {2}).concat(make<T>(m, {3}, {1})), {1, 2, 3});
}

TEST_CASE("concat of rank-3 and strided inputs matches index arithmetic") {
  NDManager m = fresh();
  std::vector<double> x = test_data(2 * 3 * 4, 31), y = test_data(2 * 3 * 4, 32);
  NDArray a = m.create(x, {2, 3, 4});
  NDArray b = m.create(y, {4, 3, 2}).transpose();  // (2, 3, 4), not contiguous
  auto b_at = [&](std::int64_t i, std::int64_t j, std::int64_t k) { return y[std::size_t(k * 6 + j * 2 + i)]; };
  auto a_at = [&](std::int64_t i, std::int64_t j, std::int64_t k) { return x[std::size_t(i * 12 + j * 4 + k)]; };
  for (int axis = 0; axis < 3; ++axis) {
    INFO("axis " << axis);
    Shape s{2, 3, 4};
    s[axis] = 2 * s[axis];
    NDArray c = a.concat(b, axis);
    check_shape(c, s);
    std::vector<double> want(std::size_t(s.size()));
    for (std::int64_t f = 0; f < s.size(); ++f) {
      auto idx = unravel(f, s);
      const std::int64_t len = (axis == 0 ? 2 : axis == 1 ? 3 : 4);
      bool second = idx[std::size_t(axis)] >= len;
      if (second) idx[std::size_t(axis)] -= len;
      want[std::size_t(f)] = second ? b_at(idx[0], idx[1], idx[2]) : a_at(idx[0], idx[1], idx[2]);
    }
    check_values(c, want, 1e-12);
    check_values(b.concat(a, axis - 3).get(axis == 0 ? "2:" : axis == 1 ? ":, 3:" : "..., 4:"), x, 1e-12);
  }
}

TEST_CASE("concat errors name the op and the arrays") {
  NDManager m = fresh();
  NDArray a = m.zeros({2, 3}), b = m.zeros({2, 4}), d = m.zeros({2, 3}, DataType::float64), v = m.zeros({3});
  NDArray s = m.create_scalar(1.0f);
  Footprint before(m);
  CHECK_THROWS_WITH_AS(concat(NDList{}), doctest::Contains("concat: the list of arrays is empty"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.concat(b), doctest::Contains("concat"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.concat(b), doctest::Contains("(2, 4)"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.concat(b, 0), doctest::Contains("other than the join axis"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.concat(v), doctest::Contains("(3,)"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.concat(d), doctest::Contains("concat: dtypes differ"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(a.concat(a, 2), doctest::Contains("concat: axis 2 is out of range"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.concat(a, -3), doctest::Contains("axis -3"), InvalidArgument);
  CHECK_THROWS_WITH_AS(s.concat(s), doctest::Contains("scalars cannot be concatenated"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.concat(NDArray()), doctest::Contains("concat"), InvalidArgument);
  before.check_unchanged();
  CHECK(values(a.concat(b, 1)).size() == 14);
}

// ---- stack ------------------------------------------------------------------------------

TEST_CASE_TEMPLATE("stack along every axis", T, float, double, std::int32_t, std::int64_t) {
  NDManager m = fresh();
  NDArray a = make<T>(m, {1, 2, 3, 4, 5, 6}, {2, 3});
  NDArray b = make<T>(m, {7, 8, 9, 10, 11, 12}, {2, 3});
  NDArray s0 = stack(NDList{a, b});
  CHECK(s0.dtype() == dtype_of<T>);
  check_shape(s0, {2, 2, 3});
  check_values(s0, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  NDArray s1 = stack(NDList{a, b}, 1);
  check_shape(s1, {2, 2, 3});
  check_values(s1, {1, 2, 3, 7, 8, 9, 4, 5, 6, 10, 11, 12});
  NDArray s2 = stack(NDList{a, b}, 2);
  check_shape(s2, {2, 3, 2});
  check_values(s2, {1, 7, 2, 8, 3, 9, 4, 10, 5, 11, 6, 12});
  check_values(stack(NDList{a, b}, -1), values(s2));
  check_values(stack(NDList{a, b}, -3), values(s0));
  // Strided inputs, three of them.
  NDArray t = stack(NDList{a.transpose(), b.transpose(), a.transpose()}, 1);
  check_shape(t, {3, 3, 2});
  check_values(t, {1, 4, 7, 10, 1, 4, 2, 5, 8, 11, 2, 5, 3, 6, 9, 12, 3, 6});
  // Scalars stack into a vector; a single array gains an axis.
  NDArray v = stack(NDList{m.create_scalar(T(1)), m.create_scalar(T(2)), m.create_scalar(T(3))});
  check_shape(v, {3});
  check_values(v, {1, 2, 3});
  check_shape(stack(NDList{a}), {1, 2, 3});
}

TEST_CASE("stack errors name the op and the arrays") {
  NDManager m = fresh();
  NDArray a = m.zeros({2, 3}), b = m.zeros({3, 2}), i = m.zeros({2, 3}, DataType::int32);
  Footprint before(m);
  CHECK_THROWS_WITH_AS(stack(NDList{}), doctest::Contains("stack: the list of arrays is empty"), InvalidArgument);
  CHECK_THROWS_WITH_AS(stack(NDList{a, b}), doctest::Contains("stack needs equal shapes"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(stack(NDList{a, b}), doctest::Contains("(3, 2)"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(stack(NDList{a, i}), doctest::Contains("stack: dtypes differ"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(stack(NDList{a, a}, 3), doctest::Contains("stack: axis 3 is out of range"), InvalidArgument);
  CHECK_THROWS_WITH_AS(stack(NDList{a, a}, -4), doctest::Contains("axis -4"), InvalidArgument);
  before.check_unchanged();
}
