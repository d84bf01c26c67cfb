// dropout (src/ops/dropout.cpp): fraction and scaling, identity at p = 0 and
// when not training, the same mask for the same seed; errors.
#include "ops_test_util.hpp"

namespace ops_test {

TEST_CASE("dropout: zeroes about p of the elements and scales the rest by 1 / (1 - p)") {
  NDManager m = fresh();
  set_random_seed(42);
  for (double p : {0.1, 0.5, 0.8}) {
    CAPTURE(p);
    NDArray x = m.ones({100, 200}, DataType::float64);
    std::vector<double> y = dropout(x, p, true).to_vector<double>();
    std::size_t zeros = 0;
    for (double v : y) {
      if (v == 0) ++zeros;
      else CHECK(v == doctest::Approx(1 / (1 - p)).epsilon(1e-15));
    }
    // 20000 Bernoulli(p) draws: 5 standard deviations either side.
    const double n = double(y.size()), sd = std::sqrt(n * p * (1 - p));
    CHECK(std::abs(double(zeros) - n * p) < 5 * sd);
  }
  NDArray f = dropout(m.ones({1000}), 0.5, true);
  CHECK(f.dtype() == DataType::float32);
  for (float v : f.to_vector<float>()) CHECK((v == 0.0f || v == 2.0f));
}

TEST_CASE("dropout: x itself at p = 0 and when not training") {
  NDManager m = fresh();
  NDArray x = m.ones({3, 4});
  const std::size_t before = m.array_count();
  CHECK(dropout(x, 0.0, true).uid() == x.uid());
  CHECK(dropout(x, 0.7, false).uid() == x.uid());
  CHECK(m.array_count() == before);
}

TEST_CASE("dropout: the same seed gives the same mask; views as inputs") {
  NDManager m = fresh();
  NDArray x = m.arange(0, 64, 1, DataType::float64).reshape({8, 8}).add(1.0);
  set_random_seed(7);
  std::vector<double> a = dropout(x, 0.5, true).to_vector<double>();
  std::vector<double> b = dropout(x, 0.5, true).to_vector<double>();
  set_random_seed(7);
  CHECK(dropout(x, 0.5, true).to_vector<double>() == a);
  CHECK(a != b);  // the stream moved on
  // A transposed view drops the elements of its own row-major order.
  set_random_seed(7);
  NDArray t = x.transpose();
  std::vector<double> tv = t.contiguous().to_vector<double>(), d = dropout(t, 0.5, true).to_vector<double>();
  for (std::size_t i = 0; i < d.size(); ++i) CHECK(d[i] == (a[i] == 0 ? 0 : tv[i] * 2));
}

TEST_CASE("dropout: errors") {
  NDManager m = fresh();
  NDArray x = m.ones({4});
  const std::size_t before = m.array_count();
  for (double p : {-0.1, 1.0, 1.5, std::nan("")}) {
    CAPTURE(p);
    CHECK_THROWS_WITH_AS(dropout(x, p, true), doctest::Contains("is outside [0, 1)"), InvalidArgument);
    CHECK_THROWS_AS(dropout(x, p, false), InvalidArgument);
  }
  CHECK_THROWS_AS(dropout(m.ones({4}, DataType::int32), 0.5, true), DTypeMismatch);
  CHECK(m.array_count() == before + 1);
}

}  // namespace ops_test
