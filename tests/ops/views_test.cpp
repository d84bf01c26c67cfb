// Tests src/ops/views.cpp: reshape (views when the layout allows, copies
// otherwise), flatten, transpose/permute/swap_axes, squeeze, expand_dims and
// broadcast_to. Views share storage with their base: writes through either
// are visible in the other, and the buffer outlives the base while a view
// remains. get() and NDIndex are in ndindex_test.cpp.
#include <cstdint>

#include "ops_test_util.hpp"

using namespace ndgc;
using namespace ops_test;

namespace {

std::vector<double> iota(std::int64_t n, double start = 0) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = start + double(i);
  return v;
}

}  // namespace

// ---- reshape and flatten -----------------------------------------------------------

TEST_CASE_TEMPLATE("reshape of a contiguous array is a view with the same elements", T, float, double, std::int32_t,
                   std::int64_t, std::uint8_t) {
  NDManager m = fresh();
  NDArray a = make<T>(m, iota(12), {12});
  NDArray b = a.reshape({3, 4});
  check_shape(b, {3, 4});
  CHECK(b.dtype() == dtype_of<T>);
  CHECK(b.shares_storage(a));
  CHECK(b.is_contiguous());
  CHECK(b.strides() == Shape{4, 1});
  check_values(b, iota(12));
  check_shape(a.reshape({-1, 6}), {2, 6});
  check_shape(a.reshape({2, -1, 3}), {2, 2, 3});
  check_shape(a.reshape({4, 3, -1}), {4, 3, 1});
  check_shape(a.reshape({-1}), {12});
  // Writes through the view reach the base and back.
  b.get("1, 2").fill_(99);
  CHECK(values(a)[6] == 99);
  a.get("0").fill_(42);
  CHECK(values(b)[0] == 42);
  // A size-1 array reshapes to a scalar and back.
  NDArray one = make<T>(m, {7}, {1, 1});
  check_shape(one.reshape(Shape{}), Shape{});
  CHECK(one.reshape(Shape{}).template item<T>() == T(7));
  check_shape(one.reshape(Shape{}).reshape({1, 1, 1}), {1, 1, 1});
  // Empty arrays reshape too.
  check_shape(m.zeros({0, 4}, dtype_of<T>).reshape({2, 0, 2}), {2, 0, 2});
  check_shape(m.zeros({0, 4}, dtype_of<T>).reshape({-1, 2}), {0, 2});
}

TEST_CASE("reshape of a non-contiguous array copies, in row-major order of the view") {
  NDManager m = fresh();
  NDArray a = m.arange(0, 6).reshape({2, 3});
  NDArray t = a.transpose();  // [[0, 3], [1, 4], [2, 5]]
  CHECK_FALSE(t.is_contiguous());
  NDArray r = t.reshape({6});
  CHECK_FALSE(r.shares_storage(a));
  check_values(r, {0, 3, 1, 4, 2, 5});
  check_values(t.reshape({2, 3}), {0, 3, 1, 4, 2, 5});
  check_values(t.flatten(), {0, 3, 1, 4, 2, 5});
  CHECK_FALSE(t.flatten().shares_storage(a));
  // A column slice (strided) copies; a row slice (contiguous with an offset) is a view.
  NDArray cols = a.get(":, 1:");
  check_values(cols.reshape({4}), {1, 2, 4, 5});
  CHECK_FALSE(cols.reshape({4}).shares_storage(a));
  NDArray row = a.get("1");
  NDArray row2 = row.reshape({3, 1});
  CHECK(row2.shares_storage(a));
  check_values(row2, {3, 4, 5});
  row2.fill_(-1);
  check_values(a, {0, 1, 2, -1, -1, -1});
  // A broadcast view copies every element it shows.
  check_values(m.create(std::vector<float>{1, 2}).broadcast_to({3, 2}).reshape({6}), {1, 2, 1, 2, 1, 2});
}

TEST_CASE("flatten") {
  NDManager m = fresh();
  NDArray a = m.arange(0, 24).reshape({2, 3, 4});
  check_shape(a.flatten(), {24});
  CHECK(a.flatten().shares_storage(a));
  check_values(a.flatten(), iota(24));
  check_shape(m.create_scalar(3.0f).flatten(), {1});
  check_shape(m.zeros({3, 0}).flatten(), {0});
}

TEST_CASE("reshape errors name the op and the shapes") {
  NDManager m = fresh();
  NDArray a = m.zeros({2, 3}), e = m.zeros({0});
  Footprint before(m);
  CHECK_THROWS_WITH_AS(a.reshape({4, 2}), doctest::Contains("reshape: cannot reshape"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.reshape({4, 2}), doctest::Contains("(4, 2)"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.reshape({4, 2}), doctest::Contains("(2, 3)"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.reshape({-1, 4}), doctest::Contains("6 elements"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(a.reshape({-1, -1}), doctest::Contains("more than one -1"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.reshape({-2, -3}), doctest::Contains("negative dimension"), InvalidArgument);
  CHECK_THROWS_AS(a.reshape({0, -1}), ShapeMismatch);
  CHECK_THROWS_AS(e.reshape({0, -1}), ShapeMismatch);  // -1 is ambiguous next to 0, as in NumPy
  before.check_unchanged();
}

// ---- transpose, permute, swap_axes ----------------------------------------------------

TEST_CASE_TEMPLATE("transpose and permute reorder axes as views", T, float, double, std::int32_t, std::int64_t) {
  NDManager m = fresh();
  NDArray a = make<T>(m, iota(24), {2, 3, 4});
  NDArray t = a.transpose();
  check_shape(t, {4, 3, 2});
  CHECK(t.shares_storage(a));
  CHECK(t.strides() == Shape{1, 4, 12});
  std::vector<double> want(24);
  for (std::int64_t i = 0; i < 24; ++i) {
    auto idx = unravel(i, {4, 3, 2});
    want[std::size_t(i)] = double(idx[2] * 12 + idx[1] * 4 + idx[0]);
  }
  check_values(t, want);
  NDArray p = a.permute({1, 2, 0});
  check_shape(p, {3, 4, 2});
  for (std::int64_t i = 0; i < 24; ++i) {
    auto idx = unravel(i, {3, 4, 2});
    want[std::size_t(i)] = double(idx[2] * 12 + idx[0] * 4 + idx[1]);
  }
  check_values(p, want);
  check_values(a.permute({-2, -1, -3}), want);
  check_values(a.transpose({1, 2, 0}), want);
  check_values(a.transpose().transpose(), iota(24));
  // Writes through a transposed view.
  t.get("3, 2, 1").fill_(-5);  // a[1, 2, 3], the last element
  CHECK(values(a)[23] == -5);
  // Rank 0 and 1 transpose to themselves.
  check_shape(m.create_scalar(T(1)).transpose(), Shape{});
  check_shape(make<T>(m, {1, 2}, {2}).transpose(), {2});
}

TEST_CASE("swap_axes") {
  NDManager m = fresh();
  NDArray a = m.arange(0, 6).reshape({1, 2, 3});
  NDArray s = a.swap_axes(0, 2);
  check_shape(s, {3, 2, 1});
  CHECK(s.shares_storage(a));
  check_values(s, {0, 3, 1, 4, 2, 5});
  check_shape(a.swap_axes(-1, 1), {1, 3, 2});
  check_values(a.swap_axes(-1, 1), {0, 3, 1, 4, 2, 5});
  check_shape(a.swap_axes(1, 1), {1, 2, 3});
}

TEST_CASE("permute, transpose and swap_axes reject bad axes, naming the op") {
  NDManager m = fresh();
  NDArray a = m.zeros({2, 3, 4});
  Footprint before(m);
  CHECK_THROWS_WITH_AS(a.permute({0, 1}), doctest::Contains("permute: 2 axes given"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.permute({0, 1}), doctest::Contains("(2, 3, 4)"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.permute({0, 1, 1}), doctest::Contains("appears twice"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.permute({0, 1, 3}), doctest::Contains("axis 3 is out of range"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.permute({0, 2, -1}), doctest::Contains("twice"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.transpose({1, 0}), doctest::Contains("transpose"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.swap_axes(0, 3), doctest::Contains("swap_axes"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.swap_axes(-4, 0), doctest::Contains("out of range"), InvalidArgument);
  before.check_unchanged();
}

// ---- squeeze, expand_dims ---------------------------------------------------------------

TEST_CASE("squeeze drops axes of length 1") {
  NDManager m = fresh();
  NDArray a = m.arange(0, 6).reshape({1, 3, 1, 2});
  check_shape(a.squeeze(), {3, 2});
  CHECK(a.squeeze().shares_storage(a));
  check_values(a.squeeze(), iota(6));
  check_shape(a.squeeze({0}), {3, 1, 2});
  check_shape(a.squeeze({-2}), {1, 3, 2});
  check_shape(a.squeeze({0, 2}), {3, 2});
  check_shape(a.squeeze(std::vector<int>{}), {3, 2});  // no axes named: as squeeze()
  check_shape(m.ones({1, 1}).squeeze(), Shape{});
  check_shape(m.ones({2, 3}).squeeze(), {2, 3});
  // Squeezing a strided view keeps its strides.
  NDArray t = m.arange(0, 6).reshape({2, 1, 3}).transpose();  // (3, 1, 2)
  check_values(t.squeeze(), {0, 3, 1, 4, 2, 5});
  Footprint before(m);
  CHECK_THROWS_WITH_AS(a.squeeze({1}), doctest::Contains("squeeze: axis 1"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.squeeze({1}), doctest::Contains("length 3, not 1"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.squeeze({4}), doctest::Contains("out of range"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.squeeze({0, 0}), doctest::Contains("twice"), InvalidArgument);
  before.check_unchanged();
}

TEST_CASE("expand_dims inserts an axis of length 1") {
  NDManager m = fresh();
  NDArray a = m.arange(0, 6).reshape({2, 3});
  check_shape(a.expand_dims(0), {1, 2, 3});
  check_shape(a.expand_dims(1), {2, 1, 3});
  check_shape(a.expand_dims(2), {2, 3, 1});
  check_shape(a.expand_dims(-1), {2, 3, 1});
  check_shape(a.expand_dims(-3), {1, 2, 3});
  CHECK(a.expand_dims(1).shares_storage(a));
  check_values(a.expand_dims(1), iota(6));
  CHECK(a.expand_dims(1).is_contiguous());
  // On a transposed view the element order follows the view.
  NDArray t = a.transpose();
  check_values(t.expand_dims(1), {0, 3, 1, 4, 2, 5});
  check_values(t.expand_dims(1).dup(), {0, 3, 1, 4, 2, 5});
  check_values(t.expand_dims(2).reshape({6}), {0, 3, 1, 4, 2, 5});
  check_shape(m.create_scalar(1.0f).expand_dims(0), {1});
  Footprint before(m);
  CHECK_THROWS_WITH_AS(a.expand_dims(3), doctest::Contains("expand_dims: axis 3"), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.expand_dims(-4), doctest::Contains("expand_dims"), InvalidArgument);
  before.check_unchanged();
}

TEST_CASE("ops that add an axis refuse arrays that already have the most axes") {
  NDManager m = fresh();
  NDArray a = m.zeros({1, 2, 1, 2, 1, 2, 1, 2});
  NDArray idx = m.zeros({1, 1, 1, 1, 1, 1, 1, 2}, DataType::int32);
  Footprint before(m);
  CHECK_THROWS_WITH_AS(a.expand_dims(0), doctest::Contains("expand_dims: "), InvalidArgument);
  CHECK_THROWS_WITH_AS(a.expand_dims(-1), doctest::Contains("already has 8 axes"), InvalidArgument);
  CHECK_THROWS_WITH_AS(stack(NDList{a, a}), doctest::Contains("stack: "), InvalidArgument);
  CHECK_THROWS_WITH_AS(idx.one_hot(3), doctest::Contains("one_hot: "), InvalidArgument);
  before.check_unchanged();
  // Rank 8 itself works everywhere else.
  check_shape(a.squeeze().expand_dims(0), {1, 2, 2, 2, 2});
  check_shape(a.add(a).sum({1, 3}, true), {1, 1, 1, 1, 1, 2, 1, 2});
  check_shape(a.transpose(), {2, 1, 2, 1, 2, 1, 2, 1});
  check_shape(concat(NDList{a, a}, 7), {1, 2, 1, 2, 1, 2, 1, 4});
  check_shape(stack(NDList{a.squeeze(), a.squeeze()}, 2), {2, 2, 2, 2, 2});
}

// ---- broadcast_to ------------------------------------------------------------------------

TEST_CASE("broadcast_to is a stride-0 view") {
  NDManager m = fresh();
  NDArray v = m.create(std::vector<float>{1, 2, 3});
  NDArray b = v.broadcast_to({2, 3});
  check_shape(b, {2, 3});
  CHECK(b.shares_storage(v));
  CHECK(b.strides() == Shape{0, 1});
  CHECK_FALSE(b.is_contiguous());
  check_values(b, {1, 2, 3, 1, 2, 3});
  v.get("1").fill_(20);  // visible in every row of the view
  check_values(b, {1, 20, 3, 1, 20, 3});
  NDArray c = m.create(std::vector<double>{1, 2, 3}, {3, 1}).broadcast_to({2, 3, 4});
  check_shape(c, {2, 3, 4});
  CHECK(c.strides() == Shape{0, 1, 0});
  check_values(c.get("1, 2"), {3, 3, 3, 3});
  check_values(m.create_scalar(std::int32_t(7)).broadcast_to({2, 2}), {7, 7, 7, 7});
  check_shape(v.broadcast_to({3}), {3});
  check_shape(v.broadcast_to({0, 3}), {0, 3});
  // dup() of a broadcast view is an ordinary contiguous array.
  NDArray d = b.dup();
  CHECK(d.is_contiguous());
  CHECK_FALSE(d.shares_storage(v));
  d.add_(1.0);
  check_values(d, {2, 21, 4, 2, 21, 4});
  NDArray z = m.zeros({2, 3});
  Footprint before(m);
  CHECK_THROWS_WITH_AS(v.broadcast_to({2, 4}), doctest::Contains("broadcast_to"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(v.broadcast_to({2, 4}), doctest::Contains("(2, 4)"), ShapeMismatch);
  CHECK_THROWS_AS(z.broadcast_to({3}), ShapeMismatch);
  CHECK_THROWS_AS(z.broadcast_to({4, 3}), ShapeMismatch);
  before.check_unchanged();
}

// ---- storage sharing and lifetime -----------------------------------------------------------

TEST_CASE("views share storage; copies and unrelated arrays do not") {
  NDManager m = fresh();
  NDArray a = m.zeros({4, 4});
  NDArray b = m.zeros({4, 4});
  CHECK(a.shares_storage(a));
  CHECK_FALSE(a.shares_storage(b));
  for (NDArray v : {a.reshape({16}), a.transpose(), a.get("1:3"), a.squeeze(), a.expand_dims(0),
                    a.broadcast_to({2, 4, 4}), a.swap_axes(0, 1), a.flatten(), a.contiguous()})
    CHECK(v.shares_storage(a));
  for (NDArray c : {a.dup(), a.to_type(DataType::float64), a.transpose().reshape({16}), a.add(0.0)})
    CHECK_FALSE(c.shares_storage(a));
  // Each view is an array of its own in the base's manager.
  NDArray v = a.transpose();
  CHECK_FALSE(v.same(a));
  CHECK(v.manager().uid() == a.manager().uid());
}

TEST_CASE("a view keeps the buffer alive after its base closes") {
  NDManager m = fresh();
  const auto bytes_before = memory::stats(Device::cpu()).current_bytes;
  NDArray a = m.arange(0, 8);
  NDArray v = a.get("2:5");
  a.close();
  CHECK(a.is_closed());
  CHECK_FALSE(v.is_closed());
  check_values(v, {2, 3, 4});
  CHECK_THROWS_WITH_AS(a.reshape({2, 4}), doctest::Contains("reshape"), ArrayClosed);
  CHECK(memory::stats(Device::cpu()).current_bytes == bytes_before + 8 * sizeof(float));
  v.close();
  CHECK(memory::stats(Device::cpu()).current_bytes == bytes_before);
}

TEST_CASE("views of a view compose") {
  NDManager m = fresh();
  NDArray a = m.arange(0, 60).reshape({3, 4, 5});
  NDArray v = a.get("1:, ::2").transpose().get("1:4").squeeze();  // (3, 2, 2)
  check_shape(v, {3, 2, 2});
  std::vector<double> want;
  for (int k = 1; k < 4; ++k)        // last axis of a, 1..3
    for (int j : {0, 2})             // middle axis, ::2
      for (int i = 1; i < 3; ++i)    // first axis, 1:
        want.push_back(i * 20 + j * 5 + k);
  check_values(v, want);
  v.mul_(-1.0);
  CHECK(values(a)[1 * 20 + 2 * 5 + 3] == -(1 * 20 + 2 * 5 + 3));
}
