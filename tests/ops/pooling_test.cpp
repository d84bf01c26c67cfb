// max_pool2d and avg_pool2d (src/ops/pooling.cpp): values by hand, padding
// semantics, views, float32; the CPU engine's 2x2 stride-2 max-pool fast
// path against its general loops, bit for bit; each error path.
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

TEST_CASE("max_pool2d dilated: taps `dilation` apart, the padding never wins, the gradient to the first maximum") {
  NDManager m = fresh();
  std::vector<double> v(25);
  for (int i = 0; i < 25; ++i) v[std::size_t(i)] = i + 1;  // row r, column c holds 5r + c + 1
  NDArray x = m.create(v, {1, 1, 5, 5}).set_requires_gradient(true);
  // 2x2 taps 2 apart span 3x3: window (oy, ox) reads rows oy, oy + 2 and columns ox, ox + 2.
  check_values(max_pool2d(x, {2, 2}, {1, 1}, {0, 0}, {2, 2}), {13, 14, 15, 18, 19, 20, 23, 24, 25});
  // Stride 2, padding 1: window oy reads rows 2oy - 1 and 2oy + 1, of which -1 and 5 are padding.
  NDArray y;
  {
    GradientCollector gc;
    y = max_pool2d(x, {2, 2}, {2, 2}, {1, 1}, {2, 2});
    gc.backward(y.sum());
  }
  check_values(y, {7, 9, 9, 17, 19, 19, 17, 19, 19});
  std::vector<double> want(25, 0.0);
  want[6] = 1, want[8] = 2, want[16] = 2, want[18] = 4;  // (1, 1), (1, 3), (3, 1), (3, 3)
  check_values(x.gradient(), want);
  check_shape(max_pool2d(x, {2, 2}, {1, 1}, {0, 0}, {1, 1}), {1, 1, 4, 4});  // dilation 1: the plain pool
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

TEST_CASE("pooling with padding: windows inside the image and those over its border, against a direct loop") {
  // The CPU engine serves windows wholly inside the image without bounds
  // checks, and the others with them: every window here is one or the other.
  NDManager m = fresh();
  const std::int64_t h = 9, wd = 11;
  std::vector<double> v(std::size_t(2 * h * wd));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i) * 2.3) * 10;
  NDArray x = m.create(v, {1, 2, h, wd});
  struct Case {
    Pair kernel, stride, padding, dilation;
  };
  for (const Case& c : {Case{{3, 3}, {2, 2}, {1, 1}, {1, 1}}, Case{{3, 2}, {1, 1}, {1, 1}, {2, 3}},
                        Case{{2, 3}, {3, 1}, {1, 1}, {1, 1}}}) {
    CAPTURE(c.kernel[0]);
    CAPTURE(c.dilation[1]);
    const std::int64_t oh = (h + 2 * c.padding[0] - c.dilation[0] * (c.kernel[0] - 1) - 1) / c.stride[0] + 1;
    const std::int64_t ow = (wd + 2 * c.padding[1] - c.dilation[1] * (c.kernel[1] - 1) - 1) / c.stride[1] + 1;
    std::vector<double> maxes, means;
    for (std::int64_t p = 0; p < 2; ++p)
      for (std::int64_t oy = 0; oy < oh; ++oy)
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          double best = -1e300, sum = 0;
          for (std::int64_t ky = 0; ky < c.kernel[0]; ++ky)
            for (std::int64_t kx = 0; kx < c.kernel[1]; ++kx) {
              const std::int64_t iy = oy * c.stride[0] - c.padding[0] + ky * c.dilation[0];
              const std::int64_t ix = ox * c.stride[1] - c.padding[1] + kx * c.dilation[1];
              if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
              const double e = v[std::size_t((p * h + iy) * wd + ix)];
              best = std::max(best, e), sum += e;
            }
          maxes.push_back(best), means.push_back(sum / double(c.kernel[0] * c.kernel[1]));
        }
    check_values(max_pool2d(x, c.kernel, c.stride, c.padding, c.dilation), maxes);
    if (c.dilation == Pair{1, 1}) check_values(avg_pool2d(x, c.kernel, c.stride, c.padding), means, 1e-12);
  }
}

// max_pool2d's output (2x2 windows, stride 2) and the gradient it passes
// back to its input, for an upstream gradient `up`. `stored` is a leaf holding the input, or with
// `transposed` the input with its last two axes swapped: the pool then reads
// it through a transpose, rows of stride H, and takes the general loops.
std::vector<std::vector<char>> pool_and_gradient(NDArray stored, bool transposed, const NDArray& up) {
  stored.set_requires_gradient(true);
  const auto seen = [&](const NDArray& a) { return transposed ? a.transpose({0, 1, 3, 2}) : a; };
  std::vector<std::vector<char>> r;
  {
    GradientCollector collector;
    NDArray y = max_pool2d(seen(stored), {2, 2}, {2, 2});
    r.push_back(bits(y));
    collector.backward(y.mul(up).sum());
  }
  r.push_back(bits(seen(stored.gradient())));
  return r;
}

TEST_CASE("max_pool2d: 2x2 windows at stride 2 take a fast path with the general loops' bits") {
  // Note [Pools of 2x2 windows at stride 2]: ties (the zeros after a ReLU and
  // repeated values) go to the first tap, a NaN wins wherever it sits, -0 and
  // +0 keep their order, the gradient lands as 0 + g (so -0 becomes +0), and
  // rows and columns past the last window get zeros.
  NDManager m = fresh();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DataType dtype : {DataType::float64, DataType::float32})
    for (const Shape& shape : {Shape{2, 3, 6, 8}, Shape{1, 2, 7, 9}, Shape{1, 1, 2, 2}}) {
      const std::int64_t h = shape[2], wd = shape[3], oh = h / 2, ow = wd / 2;
      std::vector<double> v(std::size_t(shape.size()));
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = double(std::int64_t(i * 7 % 5) - 2);  // ties, zeros
      v[1] = nan;  // tap b of the first window
      if (v.size() > 40) v[std::size_t(wd) + 2] = v[std::size_t(wd) + 3] = nan, v[40] = -0.0, v[41] = 0.0;
      std::vector<double> u(std::size_t(shape[0] * shape[1] * oh * ow));
      for (std::size_t i = 0; i < u.size(); ++i) u[i] = i % 3 == 0 ? -0.0 : double(i) * 0.25 - 1.0;
      NDArray x = m.create(v, shape).to_type(dtype);
      NDArray up = m.create(u, {shape[0], shape[1], oh, ow}).to_type(dtype);
      INFO("dtype " << to_string(dtype) << ", shape " << shape.to_string());
      const auto fast = pool_and_gradient(x.dup(), false, up);
      const auto general = pool_and_gradient(x.transpose({0, 1, 3, 2}).contiguous(), true, up);
      CHECK(fast[0] == general[0]);
      CHECK(fast[1] == general[1]);
    }
  // By hand: the first of equal maxima takes the gradient (5 at taps b and c,
  // 9 at b and c), and the column and row past the last window get none.
  NDArray x = m.create(std::vector<double>{0, 5, 3, 9, 1,  //
                                           5, 2, 9, 3, 7,  //
                                           4, 4, 4, 4, 4},
                       {1, 1, 3, 5});
  NDArray up = m.create(std::vector<double>{1, 2}, {1, 1, 1, 2});
  check_values(max_pool2d(x, {2, 2}, {2, 2}), {5, 9});
  pool_and_gradient(x, false, up);
  check_values(x.gradient(), {0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  // a NaN wins, even after a larger number
  NDArray n = m.create(std::vector<double>{1, 8, nan, 3}, {1, 1, 2, 2});
  check_values(max_pool2d(n, {2, 2}, {2, 2}), {nan});
  pool_and_gradient(n, false, m.create(std::vector<double>{6}, {1, 1, 1, 1}));
  check_values(n.gradient(), {0, 0, 6, 0});
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
  CHECK_THROWS_WITH_AS(max_pool2d(x, {2, 2}, {1, 1}, {0, 0}, {1, 0}),
                       doctest::Contains("dilation (1, 0) must be at least 1"), InvalidArgument);
  CHECK_THROWS_WITH_AS(max_pool2d(x, {2, 2}, {1, 1}, {0, 0}, {4, 1}), doctest::Contains("larger than the padded input"),
                       InvalidArgument);
  CHECK_THROWS_AS(max_pool2d(m.ones({1, 2, 4, 4}, DataType::int64), {2, 2}, {2, 2}), DTypeMismatch);
  const std::size_t before = m.array_count();
  CHECK_THROWS_AS(max_pool2d(x, {9, 9}, {1, 1}), InvalidArgument);
  CHECK(m.array_count() == before);
}

}  // namespace ops_test
