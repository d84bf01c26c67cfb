// embedding (src/ops/embedding.cpp): gathers, index dtypes, views; errors
// name the bad index, its value and position. ops::embedding_in_range, its
// twin for checked indices: the same rows and gradients, and on a GPU no
// check read back.
#include <ndgc/autograd.hpp>

#include "ops/embedding.hpp"
#include "ops_test_util.hpp"
#include "sim_gpu.hpp"

namespace ops_test {

TEST_CASE("embedding: rows of the weight by index, repeated indices included") {
  NDManager m = fresh();
  NDArray w = m.create(std::vector<double>{0, 1, 10, 11, 20, 21, 30, 31}, {4, 2});
  for (DataType it : {DataType::int64, DataType::int32, DataType::uint8}) {
    NDArray idx = m.create(std::vector<double>{3, 0, 3, 1, 2, 3}, {2, 3}).to_type(it);
    NDArray y = embedding(idx, w);
    check_shape(y, {2, 3, 2});
    check_values(y, {30, 31, 0, 1, 30, 31, 10, 11, 20, 21, 30, 31});
  }
  NDArray scalar = m.create(std::vector<double>{2}, Shape{}).to_type(DataType::int64);
  check_shape(embedding(scalar, w), {2});
  // views: transposed indices, a float32 weight seen through a slice of its rows
  NDArray idx = m.create(std::vector<double>{0, 1, 2, 3}, {2, 2}).to_type(DataType::int32).transpose();
  NDArray ws = m.create(std::vector<double>{0, 1, 9, 9, 10, 11, 9, 9, 20, 21, 9, 9, 30, 31, 9, 9}, {8, 2})
                   .to_type(DataType::float32)
                   .get("::2");
  NDArray y = embedding(idx, ws);
  CHECK(y.dtype() == DataType::float32);
  check_values(y, {0, 1, 20, 21, 10, 11, 30, 31});
}

TEST_CASE("embedding: errors name what is wrong; a failed call leaves nothing") {
  NDManager m = fresh();
  NDArray w = m.zeros({5, 3});
  NDArray bad = m.create(std::vector<double>{0, 1, 2, 4, 7, 1}, {2, 3}).to_type(DataType::int64);
  NDArray negative = m.create(std::vector<double>{0, -2}, {2}).to_type(DataType::int32);
  const std::size_t before = m.array_count();
  CHECK_THROWS_WITH_AS(embedding(bad, w), doctest::Contains("index 7 at position (1, 1)"), InvalidArgument);
  CHECK_THROWS_WITH_AS(embedding(bad, w), doctest::Contains("outside [0, 5)"), InvalidArgument);
  CHECK_THROWS_WITH_AS(embedding(negative, w), doctest::Contains("index -2 at position (1)"), InvalidArgument);
  CHECK(m.array_count() == before);
  CHECK_THROWS_WITH_AS(embedding(m.zeros({2}), w), doctest::Contains("must be integers"), DTypeMismatch);
  CHECK_THROWS_AS(embedding(m.zeros({2}, DataType::boolean), w), DTypeMismatch);
  CHECK_THROWS_AS(embedding(negative, m.zeros({5, 3}, DataType::int32)), DTypeMismatch);
  CHECK_THROWS_WITH_AS(embedding(negative, m.zeros({5})), doctest::Contains("[num_embeddings, dim]"), ShapeMismatch);
}

namespace {

struct Lookup {
  std::vector<float> rows, gradient;
};

// rows = lookup(indices, w); the gradient of sum(rows * weights) for w.
template <class F>
Lookup look_up(F lookup, const ManagerRef& m, DataType dtype) {
  NDArray w = m.create(std::vector<float>{0, 1, 10, 11, 20, 21, 30, 31}, {4, 2}).to_type(dtype);
  w.set_requires_gradient(true);
  NDArray idx = m.create(std::vector<std::int64_t>{3, 0, 3, 1}, {2, 2});
  Lookup r;
  {
    GradientCollector collector;
    NDArray rows = lookup(idx, w);
    NDArray weights = m.arange(0.0, 8.0).reshape({2, 2, 2});
    collector.backward(rows.to_type(DataType::float32).mul(weights).sum());
    r.rows = rows.to_type(DataType::float32).to_vector<float>();
  }
  r.gradient = w.gradient().to_type(DataType::float32).to_vector<float>();
  return r;
}

NDArray checked(const NDArray& i, const NDArray& w) { return embedding(i, w); }
NDArray in_range(const NDArray& i, const NDArray& w) { return ops::embedding_in_range(i, w); }

}  // namespace

TEST_CASE("embedding_in_range: embedding's rows and gradient; on a GPU, no index check read back") {
  const std::vector<float> rows{30, 31, 0, 1, 30, 31, 10, 11};
  const std::vector<float> gradient{2, 3, 6, 7, 0, 0, 0 + 4, 1 + 5};  // row 3 twice, row 2 never
  for (DataType dt : {DataType::float32, DataType::float64, DataType::bfloat16}) {
    INFO(to_string(dt));
    NDManager m = fresh();
    CHECK(look_up(in_range, m, dt).rows == rows);
    CHECK(look_up(in_range, m, dt).gradient == gradient);
  }
  test::SimGpu gpu(test::SimGpu::kDefaultBudget, test::SimGpu::Kernels::layers);
  NDManager m = NDManager::new_base_manager("embedding-gpu", Device::gpu(0));
  for (DataType dt : {DataType::float32, DataType::bfloat16}) {
    INFO(to_string(dt));
    gpu.reset_counts();
    const Lookup a = look_up(checked, m, dt);
    CHECK(gpu.index_checks() == 2);  // the forward's, the backward's
    gpu.reset_counts();
    const Lookup b = look_up(in_range, m, dt);
    CHECK(gpu.index_checks() == 0);
    CHECK(a.rows == rows);
    CHECK(b.rows == rows);
    CHECK(a.gradient == gradient);
    CHECK(b.gradient == gradient);
  }
  CHECK(gpu.engine().residency_violations() == 0);
}

}  // namespace ops_test
