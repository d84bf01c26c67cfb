// Tests ndgc::linear (src/ops/linalg.cpp, Note [Fused linear]): the fused
// path against the composition x.matmul(w).add(b) on contiguous, transposed,
// sliced and broadcast inputs, the shapes and dtypes that compose instead,
// the errors (those of matmul and add), and that the fused path makes one
// array where the composition makes two.
#include <cstdint>

#include "ops_test_util.hpp"

using namespace ndgc;
using namespace ops_test;

namespace {

void check_close(const NDArray& got, const NDArray& want, double tol) {
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  const std::vector<double> g = values(got), w = values(want);
  for (std::size_t i = 0; i < g.size(); ++i) {
    CAPTURE(i);
    if (tol == 0) CHECK(g[i] == w[i]);
    else CHECK(g[i] == doctest::Approx(w[i]).epsilon(tol));
  }
}

NDArray linear_input(NDManager& m, const Shape& shape, DataType dtype, std::uint64_t seed) {
  return m.create(test_data(std::size_t(shape.size()), seed, -2, 2), shape).to_type(dtype);
}

}  // namespace

TEST_CASE("linear equals matmul then add on every layout the fused path serves") {
  NDManager m = fresh();
  for (DataType dt : {DataType::float32, DataType::float64}) {
    CAPTURE(to_string(dt));
    const double tol = dt == DataType::float32 ? 1e-5 : 1e-12;
    NDArray x = linear_input(m, {7, 5}, dt, 1), w = linear_input(m, {5, 3}, dt, 2), b = linear_input(m, {3}, dt, 3);
    check_close(linear(x, w, b), x.matmul(w).add(b), tol);
    // Transposed operands (column-major views) and a sliced, strided bias.
    NDArray xt = linear_input(m, {5, 7}, dt, 4).transpose(), wt = linear_input(m, {3, 5}, dt, 5).transpose();
    NDArray bs = linear_input(m, {6}, dt, 6).get("::2");
    REQUIRE(bs.shape() == Shape{3});
    check_close(linear(xt, wt, bs), xt.matmul(wt).add(bs), tol);
    // A broadcast bias (stride 0) and an empty inner dimension (the bias alone).
    NDArray bb = m.create(std::vector<double>{0.5}, {1}).to_type(dt).broadcast_to({3});
    check_close(linear(x, w, bb), x.matmul(w).add(bb), tol);
    NDArray x0 = m.zeros({4, 0}, dt), w0 = m.zeros({0, 3}, dt);
    check_close(linear(x0, w0, b), m.zeros({4, 3}, dt).add(b), 0);
    // Batch axes whose rows stack (Note [Stacked rows]): a sequence [T, N, k], one row a batch, a view of rows.
    NDArray seq = linear_input(m, {4, 2, 5}, dt, 13), one_row = linear_input(m, {6, 1, 5}, dt, 14);
    check_close(linear(seq, w, b), seq.matmul(w).add(b), tol);
    check_close(linear(one_row, w, b), one_row.matmul(w).add(b), tol);
    NDArray rows_view = linear_input(m, {4, 4, 5}, dt, 15).get(":, 1:3");
    check_close(linear(rows_view, w, b), rows_view.matmul(w).add(b), tol);
    check_close(linear(m.zeros({0, 2, 5}, dt), w, b), m.zeros({0, 2, 3}, dt), 0);
  }
}

TEST_CASE("linear composes the ops where the fused path does not apply, with the same results") {
  NDManager m = fresh();
  NDArray w = linear_input(m, {4, 3}, DataType::float32, 7), b = linear_input(m, {3}, DataType::float32, 8);
  // Batches whose rows do not stack: x [2, 5, 4] seen through a permutation of [5, 2, 4].
  NDArray batched = linear_input(m, {5, 2, 4}, DataType::float32, 9).permute({1, 0, 2});
  check_close(linear(batched, w, b), batched.matmul(w).add(b), 0);
  NDArray vec = linear_input(m, {4}, DataType::float32, 10);
  check_close(linear(vec, w, b), vec.matmul(w).add(b), 0);
  NDArray b2 = linear_input(m, {1, 3}, DataType::float32, 11);
  NDArray x = linear_input(m, {5, 4}, DataType::float32, 12);
  check_close(linear(x, w, b2), x.matmul(w).add(b2), 0);
  // Integer dtypes: the engine's matmul_add serves floating types only.
  NDArray xi = m.create(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}).to_type(DataType::int32);
  NDArray wi = m.create(std::vector<double>{1, 0, 0, 1, 1, 1}, {3, 2}).to_type(DataType::int32);
  NDArray bi = m.create(std::vector<double>{10, 20}, {2}).to_type(DataType::int32);
  NDArray yi = linear(xi, wi, bi);
  CHECK(yi.dtype() == DataType::int32);
  check_values(yi, {14, 25, 20, 31});
}

TEST_CASE("linear's fused path makes one array, the composition two") {
  NDManager m = fresh();
  NDArray x = m.ones({4, 3}), w = m.ones({3, 2}), b = m.ones({2});
  NDManager step = m.new_sub_manager("step");
  const std::size_t before = m.array_count();
  NDArray y = linear(x, w, b);
  CHECK(m.array_count() == before + 1);
  CHECK(y.manager().same(m));
  check_values(y, {4, 4, 4, 4, 4, 4, 4, 4});
  NDArray z = x.matmul(w).add(b);
  CHECK(m.array_count() == before + 3);
  NDArray seq = m.ones({5, 4, 3});  // batch axes that stack: fused too
  NDArray ys = linear(seq, w, b);
  CHECK(m.array_count() == before + 5);
  CHECK(ys.shape() == Shape{5, 4, 2});
}

TEST_CASE("linear's errors are matmul's and add's, naming the shapes") {
  NDManager m = fresh();
  NDArray x = m.ones({4, 3}), w = m.ones({3, 2});
  CHECK_THROWS_WITH_AS(linear(x, m.ones({2, 2}), m.ones({2})), doctest::Contains("inner dimensions 3 and 2"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(linear(x, w, m.ones({5})), doctest::Contains("do not broadcast"), ShapeMismatch);
  CHECK_THROWS_AS(linear(x, w, m.ones({2}, DataType::float64)), DTypeMismatch);
  NDArray closed = m.ones({2});
  closed.close();
  CHECK_THROWS_WITH_AS(linear(x, w, closed), doctest::Contains("linear"), ArrayClosed);
}
