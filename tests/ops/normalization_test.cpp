// layer_norm and batch_norm (src/ops/normalization.cpp): values by hand and
// against direct loops, running statistics after several steps and in
// evaluation; errors.
#include "ops_test_util.hpp"

namespace ops_test {

TEST_CASE("layer_norm: each row normalised, then scaled and shifted") {
  NDManager m = fresh();
  NDArray x = m.create(std::vector<double>{1, 2, 3, 4, -2, 0, 2, 4}, {2, 4});
  NDArray g = m.create(std::vector<double>{1, 2, 1, 1}, {4}), b = m.create(std::vector<double>{0, 0, 1, 0}, {4});
  // row 0: mean 2.5, biased var 1.25; row 1: mean 1, var 5
  const double r0 = 1 / std::sqrt(1.25 + 1e-5), r1 = 1 / std::sqrt(5 + 1e-5);
  check_values(layer_norm(x, g, b),
               {-1.5 * r0, 2 * -0.5 * r0, 0.5 * r0 + 1, 1.5 * r0, -3 * r1, 2 * -1 * r1, 1 * r1 + 1, 3 * r1}, 1e-12);
  // over the last two axes of [2, 2, 2]: the same numbers
  NDArray y = layer_norm(x.reshape({2, 2, 2}), g.reshape({2, 2}), b.reshape({2, 2}));
  check_shape(y, {2, 2, 2});
  check_values(y, values(layer_norm(x, g, b)), 1e-12);
  // a transposed view and float32
  NDArray t = x.transpose().contiguous().transpose();
  check_values(layer_norm(t, g, b), values(layer_norm(x, g, b)), 1e-12);
  NDArray f = layer_norm(x.to_type(DataType::float32), g.to_type(DataType::float32), b.to_type(DataType::float32));
  CHECK(f.dtype() == DataType::float32);
  check_values(f, values(layer_norm(x, g, b)), 1e-5);
}

TEST_CASE("layer_norm: errors") {
  NDManager m = fresh();
  NDArray x = m.zeros({2, 4}), g = m.ones({4}), b = m.zeros({4});
  CHECK_THROWS_WITH_AS(layer_norm(x, m.ones({3}), b), doctest::Contains("gamma"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(layer_norm(x, g, m.zeros({2})), doctest::Contains("beta"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(layer_norm(x, m.ones({2, 2, 4}), b), doctest::Contains("rank 1 to 2"), ShapeMismatch);
  CHECK_THROWS_AS(layer_norm(x, m.ones({4}, DataType::float64), b), DTypeMismatch);
  CHECK_THROWS_AS(layer_norm(m.zeros({2, 4}, DataType::int32), g, b), DTypeMismatch);
  const std::size_t before = m.array_count();
  CHECK_THROWS_AS(layer_norm(x, g, b, -1.0), InvalidArgument);
  CHECK(m.array_count() == before);
}

TEST_CASE("batch_norm: training normalises by the batch and updates the running statistics") {
  NDManager m = fresh();
  // x [2, 2, 2]: channel 0 holds {1, 2, 5, 6}, channel 1 {0, 0, 4, 4}
  NDArray x = m.create(std::vector<double>{1, 2, 0, 0, 5, 6, 4, 4}, {2, 2, 2});
  NDArray g = m.create(std::vector<double>{1, 2}, {2}), b = m.create(std::vector<double>{0, 1}, {2});
  NDArray rm = m.zeros({2}, DataType::float64), rv = m.ones({2}, DataType::float64);
  NDArray y = batch_norm(x, g, b, rm, rv, true, 0.1, 0);
  // channel 0: mean 3.5, biased var 4.25 (unbiased 17/3); channel 1: mean 2, var 4 (16/3)
  const double s0 = 1 / std::sqrt(4.25);
  check_values(y, {-2.5 * s0, -1.5 * s0, 2 * -1 + 1.0 / 1, 2 * -1 + 1, 1.5 * s0, 2.5 * s0, 2 * 1 + 1, 2 * 1 + 1},
               1e-12);
  check_values(rm, {0.35, 0.2}, 1e-12);
  check_values(rv, {0.9 + 0.1 * 17 / 3, 0.9 + 0.1 * 16 / 3}, 1e-12);
}

TEST_CASE("batch_norm: running statistics after several steps, then evaluation uses them") {
  NDManager m = fresh();
  NDArray g = m.create(std::vector<double>{1.5, -1}, {2}), b = m.create(std::vector<double>{0.5, 0.25}, {2});
  NDArray rm = m.zeros({2}, DataType::float64), rv = m.ones({2}, DataType::float64);
  double want_m[2] = {0, 0}, want_v[2] = {1, 1};
  const double momentum = 0.3;
  for (int step = 0; step < 4; ++step) {
    std::vector<double> v(3 * 2 * 5);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i) * 0.9 + step) * (1 + step);
    NDArray x = m.create(v, {3, 2, 5});
    batch_norm(x, g, b, rm, rv, true, momentum);
    for (int c = 0; c < 2; ++c) {
      double s = 0, q = 0;
      for (int n = 0; n < 3; ++n)
        for (int k = 0; k < 5; ++k) s += v[std::size_t((n * 2 + c) * 5 + k)];
      const double mean = s / 15;
      for (int n = 0; n < 3; ++n)
        for (int k = 0; k < 5; ++k) q += std::pow(v[std::size_t((n * 2 + c) * 5 + k)] - mean, 2);
      want_m[c] = (1 - momentum) * want_m[c] + momentum * mean;
      want_v[c] = (1 - momentum) * want_v[c] + momentum * q / 14;
    }
  }
  check_values(rm, {want_m[0], want_m[1]}, 1e-12);
  check_values(rv, {want_v[0], want_v[1]}, 1e-12);
  // evaluation: normalised by the running statistics, which stay put
  NDArray x = m.create(std::vector<double>{1, 2, 3, 4}, {2, 2});
  NDArray y = batch_norm(x, g, b, rm, rv, false, momentum);
  check_values(y, {(1 - want_m[0]) / std::sqrt(want_v[0] + 1e-5) * 1.5 + 0.5,
                   (2 - want_m[1]) / std::sqrt(want_v[1] + 1e-5) * -1 + 0.25,
                   (3 - want_m[0]) / std::sqrt(want_v[0] + 1e-5) * 1.5 + 0.5,
                   (4 - want_m[1]) / std::sqrt(want_v[1] + 1e-5) * -1 + 0.25},
               1e-12);
  check_values(rm, {want_m[0], want_m[1]}, 1e-12);
}

TEST_CASE("batch_norm: views, float32, [N, C, H, W]") {
  NDManager m = fresh();
  std::vector<double> v(2 * 3 * 2 * 2);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::cos(double(i) * 1.1);
  NDArray x = m.create(v, {2, 3, 2, 2});
  NDArray g = m.ones({3}, DataType::float64), b = m.zeros({3}, DataType::float64);
  NDArray rm = m.zeros({3}, DataType::float64), rv = m.ones({3}, DataType::float64);
  NDArray want = batch_norm(x, g, b, rm.dup(), rv.dup(), true);
  NDArray t = x.transpose({0, 1, 3, 2}).contiguous().transpose({0, 1, 3, 2});
  check_values(batch_norm(t, g, b, rm.dup(), rv.dup(), true), values(want), 1e-12);
  // each channel of the output has mean 0
  std::vector<double> y = values(want);
  for (int c = 0; c < 3; ++c) {
    double s = 0;
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 4; ++k) s += y[std::size_t((n * 3 + c) * 4 + k)];
    CHECK(std::abs(s) < 1e-12);
  }
  auto f = [](const NDArray& a) { return a.to_type(DataType::float32); };
  NDArray rmf = f(rm), rvf = f(rv);
  check_values(batch_norm(f(x), f(g), f(b), rmf, rvf, true), values(want), 1e-5);
}

TEST_CASE("batch_norm: errors name what is wrong; a failed call leaves nothing and changes nothing") {
  NDManager m = fresh();
  NDArray x = m.zeros({4, 3, 2}), g = m.ones({3}), b = m.zeros({3}), rm = m.zeros({3}), rv = m.ones({3});
  CHECK_THROWS_WITH_AS(batch_norm(m.zeros({4}), g, b, rm, rv, true), doctest::Contains("[N, C, ...]"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(batch_norm(x, m.ones({4}), b, rm, rv, true), doctest::Contains("gamma"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(batch_norm(x, g, b, m.zeros({2}), rv, true), doctest::Contains("running_mean"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(batch_norm(x, g, b, rm, m.ones({3, 1}), true), doctest::Contains("running_var"),
                       ShapeMismatch);
  CHECK_THROWS_AS(batch_norm(x, g, b, rm, m.ones({3}, DataType::float64), true), DTypeMismatch);
  CHECK_THROWS_WITH_AS(batch_norm(m.zeros({1, 3}), g, b, rm, rv, true), doctest::Contains("training needs more than 1"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(batch_norm(x, g, b, rm, rv, true, 1.5), doctest::Contains("momentum"), InvalidArgument);
  CHECK_THROWS_WITH_AS(batch_norm(x, g, b, m.zeros({1}).broadcast_to({3}), rv, true),
                       doctest::Contains("broadcast view"), InvalidArgument);
  const std::size_t before = m.array_count();
  CHECK_THROWS_AS(batch_norm(x, g, b, rm, rv, true, 0.1, -1), InvalidArgument);
  CHECK(m.array_count() == before);
  check_values(rm, {0, 0, 0});
}

TEST_CASE("batch_norm on 16-bit x: the float32 kernel's bits rounded once, forward and backward, on long rows") {
  // Rows of 37 x 5 = 185 values (Note [Norms over widened rows]): whole
  // vectors and a tail, training and evaluation.
  NDManager m = fresh();
  for (DataType t : {DataType::bfloat16, DataType::float16}) {
    for (bool training : {true, false}) {
      CAPTURE(to_string(t));
      CAPTURE(training);
      set_random_seed(19);
      const NDArray x16 = m.random_normal({4, 3, 37, 5}).mul(3.0).add(0.5).to_type(t);
      // The loss's weights are 16-bit values, so y's gradient is the same on both runs.
      const NDArray r = m.random_normal({4, 3, 37, 5}).to_type(t).to_type(DataType::float32);
      struct Run {
        NDArray y, dx, dgamma, dbeta;
      };
      auto run = [&](const NDArray& x_in) {
        NDArray x = x_in.dup().set_requires_gradient(true);
        NDArray gamma = m.create(std::vector<float>{1.5f, -0.5f, 2.0f}).set_requires_gradient(true);
        NDArray beta = m.create(std::vector<float>{0.25f, 0.0f, -1.0f}).set_requires_gradient(true);
        NDArray mean = m.create(std::vector<float>{0.1f, 0.2f, 0.3f}), var = m.create(std::vector<float>{1.f, 2.f, 3.f});
        Run out;
        {
          GradientCollector c;
          out.y = batch_norm(x, gamma, beta, mean, var, training);
          c.backward(out.y.to_type(DataType::float32).mul(r).sum());
        }
        out.dx = x.gradient(), out.dgamma = gamma.gradient(), out.dbeta = beta.gradient();
        return out;
      };
      const Run h = run(x16), f = run(x16.to_type(DataType::float32));
      CHECK(h.y.to_vector<float>() == f.y.to_type(t).to_vector<float>());
      CHECK(h.dgamma.to_vector<float>() == f.dgamma.to_vector<float>());
      CHECK(h.dbeta.to_vector<float>() == f.dbeta.to_vector<float>());
      // dx: the same float32 arithmetic from the same float32 gradient, rounded once.
      CHECK(h.dx.to_vector<float>() == f.dx.to_type(t).to_vector<float>());
    }
  }
}

}  // namespace ops_test

namespace ops_test {

TEST_CASE("batch_norm: a 16-bit x with float32 parameters: float32 statistics, x's dtype out, float32 gradients") {
  NDManager m = fresh();
  for (DataType t : {DataType::bfloat16, DataType::float16}) {
    CAPTURE(to_string(t));
    set_random_seed(9);
    NDArray x = m.random_normal({8, 3, 2, 2}).mul(2.0).add(1.0).to_type(t);
    NDArray gamma = m.ones({3}).set_requires_gradient(true), beta = m.zeros({3}).set_requires_gradient(true);
    NDArray mean = m.zeros({3}), var = m.ones({3});
    NDArray mean32 = m.zeros({3}), var32 = m.ones({3});
    NDArray y;
    {
      GradientCollector c;
      y = batch_norm(x, gamma, beta, mean, var, true);
      c.backward(y.to_type(DataType::float32).mul(m.random_normal({8, 3, 2, 2})).sum());
    }
    const NDArray y32 = batch_norm(x.to_type(DataType::float32), m.ones({3}), m.zeros({3}), mean32, var32, true);
    CHECK(y.dtype() == t);
    CHECK(mean.dtype() == DataType::float32);
    CHECK(gamma.gradient().dtype() == DataType::float32);
    // The running statistics are the float32 ones of the same values, to the bit.
    CHECK(mean.to_vector<float>() == mean32.to_vector<float>());
    CHECK(var.to_vector<float>() == var32.to_vector<float>());
    CHECK(y.to_vector<float>() == y32.to_type(t).to_vector<float>());  // float32 arithmetic, rounded once
    CHECK_THROWS_AS(batch_norm(x, gamma, beta, mean.to_type(DataType::float64), var, true), DTypeMismatch);
    CHECK_THROWS_AS(batch_norm(x.to_type(DataType::float32), gamma.to_type(t), beta.to_type(t), mean.to_type(t),
                               var.to_type(t), true),
                    DTypeMismatch);  // float32 x, 16-bit parameters: outside autocast, no conversion
  }
}

}  // namespace ops_test
