// max_pool2d and avg_pool2d (src/ops/pooling.cpp): values by hand, padding
// semantics, views, float32; each error path.
#include "ops_test_util.hpp"

namespace ops_test {

TEST_CASE("max_pool2d and avg_pool2d: a 4x4 image, by hand") {
  NDManager m = fresh();
  std::vector<double> v(16);
  for (int i = 0; i < 16; ++i) v[std::size_t(i)] = i + 1;
  NDArray x = m.create(v, {1, 1, 4, 4});
  check_values(max_pool2d(x, {2, 2}, {2, 2}), {6, 8, 14, 16});
  check_values(avg_pool2d(x, {2, 2}, {2, 2}), {3.5, 5.5, 11.5, 13.5});
  // stride 1, uneven kernel 1x3
  check_values(max_pool2d(x, {1, 3}, {1, 1}), {3, 4, 7, 8, 11, 12, 15, 16});
  check_shape(max_pool2d(x, {3, 3}, {2, 2}), {1, 1, 1, 1});
}

TEST_CASE("max_pool2d: the padding never wins; avg_pool2d: it counts as zeros") {
  NDManager m = fresh();
  NDArray x = m.create(std::vector<double>{-1, -2, -3, -4}, {1, 1, 2, 2});
  // Every window is one real element and three of padding: the element wins even though it is negative.
  check_values(max_pool2d(x, {2, 2}, {2, 2}, {1, 1}), {-1, -2, -3, -4});
  check_values(avg_pool2d(x, {2, 2}, {2, 2}, {1, 1}), {-0.25, -0.5, -0.75, -1});
  NDArray y = m.create(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  check_values(avg_pool2d(y, {3, 3}, {1, 1}, {1, 1}), {12.0 / 9, 21.0 / 9, 16.0 / 9, 27.0 / 9, 45.0 / 9, 33.0 / 9,
                                                      24.0 / 9, 39.0 / 9, 28.0 / 9});
  check_values(max_pool2d(y, {3, 3}, {2, 2}, {1, 1}), {5, 6, 8, 9});
}

TEST_CASE("pooling: batches, channels, views and float32") {
  NDManager m = fresh();
  std::vector<double> v(2 * 3 * 4 * 6);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i) * 1.7);
  NDArray x = m.create(v, {2, 3, 4, 6});
  // The reference: each (n, c) plane pooled by a direct loop.
  auto ref = [&](bool max) {
    std::vector<double> r;
    for (int p = 0; p < 6; ++p)
      for (int oy = 0; oy < 2; ++oy)
        for (int ox = 0; ox < 3; ++ox) {
          double best = -1e300, sum = 0;
          for (int ky = 0; ky < 2; ++ky)
            for (int kx = 0; kx < 2; ++kx) {
              const double e = v[std::size_t(p * 24 + (oy * 2 + ky) * 6 + ox * 2 + kx)];
              best = std::max(best, e), sum += e;
            }
          r.push_back(max ? best : sum / 4);
        }
    return r;
  };
  check_values(max_pool2d(x, {2, 2}, {2, 2}), ref(true), 1e-12);
  check_values(avg_pool2d(x, {2, 2}, {2, 2}), ref(false), 1e-12);
  NDArray t = x.transpose({0, 1, 3, 2}).contiguous().transpose({0, 1, 3, 2});
  CHECK_FALSE(t.is_contiguous());
  check_values(max_pool2d(t, {2, 2}, {2, 2}), ref(true), 1e-12);
  NDArray f = x.to_type(DataType::float32);
  NDArray y = avg_pool2d(f, {2, 2}, {2, 2});
  CHECK(y.dtype() == DataType::float32);
  check_values(y, ref(false), 1e-6);
}

TEST_CASE("pooling: errors name what is wrong, and a failed call leaves nothing") {
  NDManager m = fresh();
  NDArray x = m.ones({1, 2, 4, 4});
  CHECK_THROWS_WITH_AS(max_pool2d(m.ones({2, 4, 4}), {2, 2}, {2, 2}), doctest::Contains("has rank 3"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(avg_pool2d(x, {0, 2}, {2, 2}), doctest::Contains("kernel (0, 2) must be at least 1"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(max_pool2d(x, {2, 2}, {2, 0}), doctest::Contains("stride (2, 0) must be at least 1"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(max_pool2d(x, {2, 2}, {1, 1}, {2, 0}), doctest::Contains("at most half the kernel"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(avg_pool2d(x, {5, 2}, {1, 1}), doctest::Contains("larger than the padded input"),
                       InvalidArgument);
  CHECK_THROWS_AS(max_pool2d(m.ones({1, 2, 4, 4}, DataType::int64), {2, 2}, {2, 2}), DTypeMismatch);
  const std::size_t before = m.array_count();
  CHECK_THROWS_AS(max_pool2d(x, {9, 9}, {1, 1}), InvalidArgument);
  CHECK(m.array_count() == before);
}

}  // namespace ops_test
