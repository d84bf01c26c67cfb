// The NDGC_HD maths of src/ops/lstm_math.hpp, run on the host as a CUDA
// kernel would run it: one unit by hand, and the backward against central
// differences of the forward.
#include <doctest/doctest.h>

#include <cmath>

#include "ops/lstm_math.hpp"

namespace ndgc::ops {

TEST_CASE("lstm_math: one unit by hand") {
  const double ig[4] = {0.5, -0.3, 0.8, 0.1}, hg[4] = {0.1, 0.2, -0.4, 0.3};
  const lstm::Gates<double> a = lstm::pre_activations(ig, hg, 1, 0);
  CHECK(a.i == doctest::Approx(0.6));
  CHECK(a.f == doctest::Approx(-0.1));
  CHECK(a.g == doctest::Approx(0.4));
  CHECK(a.o == doctest::Approx(0.4));
  double h = 0, c = 0;
  lstm::cell_forward(a, 0.7, h, c);
  const double i = 1 / (1 + std::exp(-0.6)), f = 1 / (1 + std::exp(0.1)), g = std::tanh(0.4),
               o = 1 / (1 + std::exp(-0.4));
  CHECK(c == doctest::Approx(f * 0.7 + i * g).epsilon(1e-15));
  CHECK(h == doctest::Approx(o * std::tanh(f * 0.7 + i * g)).epsilon(1e-15));
  CHECK(lstm::sigmoid(0.0) == 0.5);
  CHECK(lstm::sigmoid(-1000.0) == 0.0);  // no NaN at the extremes
  CHECK(lstm::sigmoid(1000.0f) == 1.0f);
}

TEST_CASE("lstm_math: pre_activations read unit j of each gate block") {
  const float ig[8] = {1, 2, 3, 4, 5, 6, 7, 8}, hg[8] = {10, 20, 30, 40, 50, 60, 70, 80};
  const lstm::Gates<float> a = lstm::pre_activations(ig, hg, 2, 1);
  CHECK(a.i == 22);
  CHECK(a.f == 44);
  CHECK(a.g == 66);
  CHECK(a.o == 88);
}

TEST_CASE("lstm_math: the backward is the forward's derivative") {
  // loss = wh h' + wc c'; check d loss / d (a_i, a_f, a_g, a_o, c) by central differences
  const double wh = 0.7, wc = -1.3, eps = 1e-6;
  const lstm::Gates<double> a{0.3, -0.8, 0.5, 1.1};
  const double c = -0.4;
  auto loss = [&](lstm::Gates<double> x, double cs) {
    double h = 0, cn = 0;
    lstm::cell_forward(x, cs, h, cn);
    return wh * h + wc * cn;
  };
  double dc = 0;
  const lstm::Gates<double> d = lstm::cell_backward(a, c, wh, wc, dc);
  double lstm::Gates<double>::*fields[4] = {&lstm::Gates<double>::i, &lstm::Gates<double>::f,
                                             &lstm::Gates<double>::g, &lstm::Gates<double>::o};
  for (auto field : fields) {
    lstm::Gates<double> up = a, down = a;
    up.*field += eps, down.*field -= eps;
    CHECK(d.*field == doctest::Approx((loss(up, c) - loss(down, c)) / (2 * eps)).epsilon(1e-8));
  }
  CHECK(dc == doctest::Approx((loss(a, c + eps) - loss(a, c - eps)) / (2 * eps)).epsilon(1e-8));
}

}  // namespace ndgc::ops
