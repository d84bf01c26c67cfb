// Tests src/ops/stacked_rows.cpp (Note [Stacked rows]): which batched views
// stack into one matrix, and that a batched product by a shared matrix is
// the stacked rows' one product, forward and gradients, to the bit.
#include <ndgc/autograd.hpp>

#include "ops/op_support.hpp"
#include "ops/stacked_rows.hpp"
#include "ops_test_util.hpp"

using namespace ndgc;
using namespace ops_test;

namespace {

ops::TensorView view(std::initializer_list<std::int64_t> shape, std::initializer_list<std::int64_t> strides) {
  ops::TensorView v;
  v.rank = int(shape.size());
  std::copy(shape.begin(), shape.end(), v.shape);
  std::copy(strides.begin(), strides.end(), v.strides);
  return v;
}

void check_matrix(const std::optional<ops::TensorView>& m, std::int64_t rows, std::int64_t row_stride,
                  std::int64_t cols, std::int64_t col_stride) {
  REQUIRE(m.has_value());
  CHECK(m->rank == 2);
  CHECK(m->shape[0] == rows);
  CHECK(m->strides[0] == row_stride);
  CHECK(m->shape[1] == cols);
  CHECK(m->strides[1] == col_stride);
}

}  // namespace

TEST_CASE("stacked_rows: batch axes that step over whole rows stack; broadcast or permuted ones do not") {
  check_matrix(ops::stacked_rows(view({4, 3, 5}, {15, 5, 1})), 12, 5, 5, 1);            // contiguous
  check_matrix(ops::stacked_rows(view({2, 4, 3, 5}, {60, 15, 5, 1})), 24, 5, 5, 1);     // two batch axes
  check_matrix(ops::stacked_rows(view({64, 1, 128}, {128, 0, 1})), 64, 128, 128, 1);   // one row a batch, its stride free
  check_matrix(ops::stacked_rows(view({1, 3, 5}, {99, 7, 1})), 3, 7, 5, 1);             // a length-1 axis, any stride
  check_matrix(ops::stacked_rows(view({4, 3, 5}, {24, 8, 1})), 12, 8, 5, 1);            // padded rows, regular
  check_matrix(ops::stacked_rows(view({3, 5}, {5, 1})), 3, 5, 5, 1);                    // no batch axes
  CHECK_FALSE(ops::stacked_rows(view({4, 3, 5}, {0, 5, 1})).has_value());               // a broadcast batch
  CHECK_FALSE(ops::stacked_rows(view({4, 3, 5}, {5, 20, 1})).has_value());              // batch and rows permuted
  CHECK_FALSE(ops::stacked_rows(view({4, 3, 5}, {16, 5, 1})).has_value());              // a gap between batches
  CHECK_FALSE(ops::stacked_rows(view({5}, {1})).has_value());                           // not a matrix
}

TEST_CASE("a batched product by a shared matrix is the stacked rows' product, forward and gradients, to the bit") {
  NDManager m = fresh();
  // [T, N, k] × [k, n], as exporters write a sequence model's projections:
  // N = 1 is the case that ran as T matrix-vector products before.
  for (const Shape& xs : {Shape{64, 1, 128}, Shape{6, 3, 40}, Shape{2, 3, 4, 96}}) {
    INFO(xs.to_string());
    const std::int64_t k = xs[xs.rank() - 1], n = 72, rows = xs.size() / k;
    NDArray x = m.create(test_data(std::size_t(xs.size()), 7, -1, 1), xs).to_type(DataType::float32);
    NDArray w = m.create(test_data(std::size_t(k * n), 8, -1, 1), {k, n}).to_type(DataType::float32);
    NDArray xg = x.dup().set_requires_gradient(true), wg = w.dup().set_requires_gradient(true);
    NDArray x2 = x.dup().set_requires_gradient(true), w2 = w.dup().set_requires_gradient(true);
    NDArray weights = m.create(test_data(std::size_t(rows * n), 9, -1, 1), {rows, n}).to_type(DataType::float32);
    std::vector<float> batched, stacked;
    {
      GradientCollector c;
      NDArray y = xg.matmul(wg);
      c.backward(y.reshape({rows, n}).mul(weights).sum());
      batched = y.to_vector<float>();
    }
    {
      GradientCollector c;
      NDArray y = x2.reshape({rows, k}).matmul(w2);
      c.backward(y.mul(weights).sum());
      stacked = y.to_vector<float>();
    }
    CHECK(batched == stacked);
    CHECK(wg.gradient().to_vector<float>() == w2.gradient().to_vector<float>());
    CHECK(xg.gradient().to_vector<float>() == x2.gradient().to_vector<float>());
  }
}

TEST_CASE("a batched product whose rows do not stack still gives the per-batch products") {
  NDManager m = fresh();
  // x [4, 3, 5] seen through a permutation of a [3, 4, 5] array: its batch axis does not step over whole rows.
  const std::vector<double> xv = test_data(60, 3, -2, 2), wv = test_data(35, 4, -2, 2);
  NDArray x = m.create(xv, {3, 4, 5}).permute({1, 0, 2});
  NDArray w = m.create(wv, {5, 7});
  NDArray y = x.matmul(w);
  check_shape(y, {4, 3, 7});
  std::vector<double> want;
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 7; ++j) {
        double s = 0;
        for (int c = 0; c < 5; ++c) s += xv[std::size_t((i * 4 + t) * 5 + c)] * wv[std::size_t(c * 7 + j)];
        want.push_back(s);
      }
  check_values(y, want, 1e-12);
}
