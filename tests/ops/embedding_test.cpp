// embedding (src/ops/embedding.cpp): gathers, index dtypes, views; errors
// name the bad index, its value and position.
#include "ops_test_util.hpp"

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

}  // namespace ops_test
