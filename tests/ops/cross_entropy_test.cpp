// Tests ndgc::sparse_softmax_cross_entropy (src/ops/activations.cpp,
// src/ops/cpu/loss_kernels.cpp, Note [Fused cross-entropy]): the fused
// kernels against the composition log_softmax · one_hot on every label
// dtype, gradients through GradientCollector, the layouts that compose
// instead, and every error.
#include <cstdint>

#include <ndgc/autograd.hpp>

#include "ops_test_util.hpp"

using namespace ndgc;
using namespace ops_test;

namespace {

NDArray composed(const NDArray& logits, const NDArray& labels) {
  const std::int64_t classes = logits.shape()[logits.shape().rank() - 1];
  const std::int64_t rows = logits.shape().size() / classes;
  Shape row_shape = logits.shape();
  row_shape.erase(row_shape.rank() - 1);
  NDArray hot = labels.to_type(DataType::int64).reshape(row_shape).one_hot(classes, logits.dtype());
  return logits.log_softmax(-1).mul(hot).sum().mul(-1.0 / double(rows));
}

// The loss and the logits' gradient of f.
std::pair<double, std::vector<double>> loss_and_gradient(NDManager& m, const std::vector<double>& values,
                                                         const Shape& shape, DataType dt,
                                                         const std::function<NDArray(const NDArray&)>& f) {
  NDArray x = m.create(values, shape).to_type(dt).set_requires_gradient(true);
  double loss = 0;
  {
    GradientCollector c;
    NDArray l = f(x).mul(3.0);  // an upstream gradient other than 1
    loss = l.item<double>();
    c.backward(l);
  }
  return {loss, x.gradient().to_vector<double>()};
}

}  // namespace

TEST_CASE("sparse softmax cross-entropy: fused equals the composition, values and gradients") {
  NDManager m = fresh();
  const std::vector<double> logits = test_data(6 * 5, 21, -4, 4);
  for (DataType dt : {DataType::float32, DataType::float64}) {
    for (DataType lt : {DataType::int32, DataType::int64, DataType::float32, DataType::uint8}) {
      CAPTURE(to_string(dt));
      CAPTURE(to_string(lt));
      const double tol = dt == DataType::float32 ? 1e-5 : 1e-12;
      NDArray labels = m.create(std::vector<double>{0, 4, 2, 2, 1, 3}, {6}).to_type(lt);
      auto [fl, fg] = loss_and_gradient(m, logits, {6, 5}, dt,
                                        [&](const NDArray& x) { return sparse_softmax_cross_entropy(x, labels); });
      auto [cl, cg] = loss_and_gradient(m, logits, {6, 5}, dt, [&](const NDArray& x) { return composed(x, labels); });
      CHECK(fl == doctest::Approx(cl).epsilon(tol));
      REQUIRE(fg.size() == cg.size());
      for (std::size_t i = 0; i < fg.size(); ++i) CHECK(fg[i] == doctest::Approx(cg[i]).epsilon(tol).scale(1));
    }
  }
}

TEST_CASE("sparse softmax cross-entropy: many rows span several blocks, and rows longer than a block") {
  // 300 x 7 = 2100 logits: the forward's stack buffer (1024 elements) holds
  // 146 rows at a time, so the rows split into blocks of 146, 146 and 8.
  // 3 x 1500: each row is longer than the buffer (a heap buffer per row).
  NDManager m = fresh();
  for (auto shape : {std::pair<std::int64_t, std::int64_t>{300, 7}, {3, 1500}}) {  // CAPTURE: no structured binding
    const std::int64_t rows = shape.first, classes = shape.second;
    CAPTURE(rows);
    CAPTURE(classes);
    const std::vector<double> logits = test_data(std::size_t(rows * classes), 9, -6, 6);
    std::vector<double> label_values;
    for (std::int64_t r = 0; r < rows; ++r) label_values.push_back(double((r * 5 + 3) % classes));
    NDArray labels = m.create(label_values, {rows}).to_type(DataType::int64);
    for (DataType dt : {DataType::float32, DataType::float64}) {
      CAPTURE(to_string(dt));
      const double tol = dt == DataType::float32 ? 1e-5 : 1e-12;
      auto [fl, fg] = loss_and_gradient(m, logits, {rows, classes}, dt,
                                        [&](const NDArray& x) { return sparse_softmax_cross_entropy(x, labels); });
      auto [cl, cg] = loss_and_gradient(m, logits, {rows, classes}, dt,
                                        [&](const NDArray& x) { return composed(x, labels); });
      CHECK(fl == doctest::Approx(cl).epsilon(tol));
      REQUIRE(fg.size() == cg.size());
      for (std::size_t i = 0; i < fg.size(); ++i) CHECK(fg[i] == doctest::Approx(cg[i]).epsilon(tol).scale(1));
    }
  }
}

TEST_CASE("sparse softmax cross-entropy: batch axes, labels shaped like the rows, strided logits") {
  NDManager m = fresh();
  const std::vector<double> v = test_data(2 * 3 * 4, 5, -3, 3);
  NDArray labels = m.create(std::vector<double>{0, 3, 1, 2, 2, 0}, {2, 3}).to_type(DataType::int64);
  auto [fl, fg] = loss_and_gradient(m, v, {2, 3, 4}, DataType::float64,
                                    [&](const NDArray& x) { return sparse_softmax_cross_entropy(x, labels); });
  auto [cl, cg] = loss_and_gradient(m, v, {2, 3, 4}, DataType::float64,
                                    [&](const NDArray& x) { return composed(x, labels); });
  CHECK(fl == doctest::Approx(cl).epsilon(1e-12));
  for (std::size_t i = 0; i < fg.size(); ++i) CHECK(fg[i] == doctest::Approx(cg[i]).epsilon(1e-12).scale(1));
  // A transposed (non-contiguous) view composes the ops: same loss.
  NDArray t = m.create(test_data(4 * 6, 8, -3, 3), {4, 6}).transpose();
  NDArray flat = m.create(std::vector<double>{0, 1, 2, 3, 0, 1}, {6});
  CHECK(sparse_softmax_cross_entropy(t, flat).item<double>() ==
        doctest::Approx(composed(t, flat).item<double>()).epsilon(1e-6));
}

TEST_CASE("sparse softmax cross-entropy: the fused path makes one array") {
  NDManager m = fresh();
  NDArray x = m.zeros({4, 3});
  NDArray labels = m.zeros({4}, DataType::int64);
  const std::size_t before = m.array_count();
  NDArray loss = sparse_softmax_cross_entropy(x, labels);
  CHECK(m.array_count() == before + 1);
  CHECK(loss.shape() == Shape{});
  CHECK(loss.item<double>() == doctest::Approx(std::log(3.0)));
}

TEST_CASE("sparse softmax cross-entropy: errors name what is wrong") {
  NDManager m = fresh();
  NDArray x = m.zeros({4, 3});
  CHECK_THROWS_WITH_AS(sparse_softmax_cross_entropy(x, m.create(std::vector<double>{0, 1, 3, 2}, {4})),
                       doctest::Contains("label 3 at row 2 is outside [0, 3)"), InvalidArgument);
  CHECK_THROWS_WITH_AS(sparse_softmax_cross_entropy(x, m.create(std::vector<double>{0, -1, 0, 0}, {4})
                                                           .to_type(DataType::int32)),
                       doctest::Contains("label -1 at row 1"), InvalidArgument);
  CHECK_THROWS_WITH_AS(sparse_softmax_cross_entropy(x, m.create(std::vector<double>{0, 1.5, 0, 0}, {4})),
                       doctest::Contains("label 1.5 at row 1 is not a class index"), InvalidArgument);
  CHECK_THROWS_WITH_AS(sparse_softmax_cross_entropy(x, m.zeros({3}, DataType::int64)),
                       doctest::Contains("3 labels for 4 rows"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(sparse_softmax_cross_entropy(x, m.zeros({4}, DataType::boolean)),
                       doctest::Contains("class indices"), DTypeMismatch);
  CHECK_THROWS_AS(sparse_softmax_cross_entropy(m.zeros({4, 3}, DataType::int32), m.zeros({4}, DataType::int64)),
                  DTypeMismatch);
  CHECK_THROWS_WITH_AS(sparse_softmax_cross_entropy(m.zeros({}), m.zeros({1})), doctest::Contains("class axis"),
                       InvalidArgument);
  // A failed call leaves no array behind.
  const std::size_t before = m.array_count();
  CHECK_THROWS_AS(sparse_softmax_cross_entropy(x, m.create(std::vector<double>{9, 0, 0, 0}, {4})), InvalidArgument);
  CHECK(m.array_count() == before + 1);  // the labels array made for the call
}
