// The CPU engine's fused optimizer loops (src/ops/cpu/optimizer_kernels.cpp,
// Note [One loop per update]) against a scalar reference written here, at
// lengths around the vector width (empty, a tail only, one vector, a vector
// and a tail, many) for float32 and float64, with and without weight decay
// and momentum; and the views the kernel declines (strided, mixed dtypes,
// integers), which the ops layer then composes.
#include <doctest/doctest.h>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "ops/engine.hpp"

namespace ndgc {
namespace {

using ops::TensorView;

const std::int64_t kLengths[] = {0, 1, 7, 8, 9, 16, 33, 1000, 2049};

template <class T>
TensorView view(std::vector<T>& v) {
  return ops::contiguous_view(v.data(), std::is_same_v<T, float> ? DataType::float32 : DataType::float64,
                              Shape{std::int64_t(v.size())});
}

template <class T>
std::vector<T> random_values(std::int64_t n, std::uint32_t seed, T low, T high) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u{double(low), double(high)};
  std::vector<T> v(static_cast<std::size_t>(n));
  for (T& x : v) x = T(u(rng));
  return v;
}

template <class T>
T tolerance() {
  return std::is_same_v<T, float> ? T(1e-6) : T(1e-13);
}

template <class T>
void check_close(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(what << "[" << i << "] of " << got.size());
    CHECK(double(got[i]) == doctest::Approx(double(want[i])).epsilon(double(tolerance<T>())));
  }
}

template <class T>
void adam_case(std::int64_t n, double weight_decay) {
  CAPTURE(n);
  CAPTURE(weight_decay);
  const ops::AdamHyper h{1e-3, 0.9, 0.999, 1e-8, weight_decay, 1 - std::pow(0.9, 3), 1 - std::pow(0.999, 3)};
  std::vector<T> w = random_values<T>(n, 1, -1, 1), g = random_values<T>(n, 2, -0.5, 0.5),
                 m = random_values<T>(n, 3, -0.1, 0.1), v = random_values<T>(n, 4, 0, 0.01);
  std::vector<T> rw = w, rm = m, rv = v;
  for (std::int64_t i = 0; i < n; ++i) {
    const double gi = double(g[i]) + weight_decay * double(rw[i]);
    rm[i] = T(h.beta1 * double(rm[i]) + (1 - h.beta1) * gi);
    rv[i] = T(h.beta2 * double(rv[i]) + (1 - h.beta2) * gi * gi);
    rw[i] = T(double(rw[i]) - h.learning_rate / h.bias_correction1 * double(rm[i]) /
                                  (std::sqrt(double(rv[i])) / std::sqrt(h.bias_correction2) + h.epsilon));
  }
  REQUIRE(ops::engine(Device::cpu()).adam_update(view(w), view(g), view(m), view(v), h));
  check_close(m, rm, "mean");
  check_close(v, rv, "variance");
  check_close(w, rw, "weight");
}

template <class T>
void sgd_case(std::int64_t n, double momentum, double weight_decay) {
  CAPTURE(n);
  CAPTURE(momentum);
  CAPTURE(weight_decay);
  const ops::SgdHyper h{0.1, momentum, weight_decay};
  std::vector<T> w = random_values<T>(n, 5, -1, 1), g = random_values<T>(n, 6, -0.5, 0.5),
                 m = random_values<T>(n, 7, -0.1, 0.1);
  std::vector<T> rw = w, rm = m;
  for (std::int64_t i = 0; i < n; ++i) {
    const double gi = double(g[i]) + weight_decay * double(rw[i]);
    if (momentum != 0) {
      rm[i] = T(momentum * double(rm[i]) + gi);
      rw[i] = T(double(rw[i]) - h.learning_rate * double(rm[i]));
    } else {
      rw[i] = T(double(rw[i]) - h.learning_rate * gi);
    }
  }
  TensorView none;
  none.data = nullptr;
  REQUIRE(ops::engine(Device::cpu()).sgd_update(view(w), view(g), momentum != 0 ? view(m) : none, h));
  check_close(w, rw, "weight");
  if (momentum != 0) check_close(m, rm, "momentum");
}

}  // namespace

TEST_CASE_TEMPLATE("the fused Adam loop matches a scalar reference at every length", T, float, double) {
  for (std::int64_t n : kLengths) {
    adam_case<T>(n, 0);
    adam_case<T>(n, 0.01);
  }
}

TEST_CASE_TEMPLATE("the fused SGD loop matches a scalar reference at every length", T, float, double) {
  for (std::int64_t n : kLengths)
    for (double momentum : {0.0, 0.9})
      for (double wd : {0.0, 0.01}) sgd_case<T>(n, momentum, wd);
}

TEST_CASE("a zero weight decay leaves an infinite weight infinite (no 0 * w term)") {
  std::vector<float> w = {INFINITY, 1}, g = {0.5f, 0.5f}, m = {0, 0};
  TensorView none;
  REQUIRE(ops::engine(Device::cpu()).sgd_update(view(w), view(g), none, {0.1, 0, 0}));
  CHECK(std::isinf(w[0]));
  REQUIRE(ops::engine(Device::cpu()).sgd_update(view(w), view(g), view(m), {0.1, 0.9, 0}));
  CHECK(std::isinf(w[0]));
  std::vector<float> v = {0, 0};
  REQUIRE(ops::engine(Device::cpu()).adam_update(view(w), view(g), view(m), view(v),
                                                  {1e-3, 0.9, 0.999, 1e-8, 0, 0.1, 0.001}));
  CHECK(std::isinf(w[0]));
}

// Note [No denormal state]: a state value that decays below the smallest
// normal number is stored as zero, in the vector body and in the tail alike;
// one that stays normal is kept.
TEST_CASE_TEMPLATE("the fused loops store denormal optimizer state as zero", T, float, double) {
  constexpr T tiny = std::numeric_limits<T>::min(), ulp = std::numeric_limits<T>::denorm_min();
  const std::int64_t n = 9;  // index 0 lies in a full vector, index 8 in the tail
  for (std::int64_t at : {std::int64_t(0), n - 1}) {
    CAPTURE(at);
    std::vector<T> w(n, T(0.5)), g(n, T(0)), m(n, T(0.01)), v(n, T(0.01));
    m[at] = tiny, v[at] = 4 * ulp;       // 0.9 * tiny is denormal; 0.999 * 4 ulp rounds back to 4 ulp
    m[n - 1 - at] = 2 * tiny;            // 0.9 * 2 * tiny stays normal
    const ops::AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0, 0.1, 0.001};
    REQUIRE(ops::engine(Device::cpu()).adam_update(view(w), view(g), view(m), view(v), h));
    CHECK(m[at] == 0);
    CHECK(v[at] == 0);
    CHECK(m[n - 1 - at] == T(0.9) * (2 * tiny));
    CHECK(std::isnormal(v[n - 1 - at]));
    CHECK(w[at] == T(0.5));

    std::vector<T> sm(n, T(0.01));
    sm[at] = 4 * ulp;
    std::fill(w.begin(), w.end(), T(0.5));
    REQUIRE(ops::engine(Device::cpu()).sgd_update(view(w), view(g), view(sm), {0.1, 0.9, 0}));
    CHECK(sm[at] == 0);
    CHECK(sm[n - 1 - at] == T(0.9) * T(0.01));
    REQUIRE(ops::engine(Device::cpu()).sgd_update(view(w), view(g), view(sm), {0.1, 0.9, 0.01}));
    CHECK(sm[at] != 0);  // weight decay brings a normal term: nothing to flush
  }
}

// Note [No denormal state]: Adam divides by the denominator before it scales
// by the learning rate, so a small moment times a small rate never passes
// through a denormal product. Multiplied first, lr * m below is denormal, keeps
// only a few bits, and the weight's step is off by far more than rounding.
TEST_CASE_TEMPLATE("the fused Adam step divides first, so a small moment keeps its precision", T, float, double) {
  constexpr T tiny = std::numeric_limits<T>::min();
  std::vector<T> w(9, T(0)), g(9, T(0)), m(9, 10 * tiny), v(9, T(1e-30));
  const ops::AdamHyper h{1e-8, 0.9, 0.999, 1e-20, 0, 1, 1};
  REQUIRE(ops::engine(Device::cpu()).adam_update(view(w), view(g), view(m), view(v), h));
  const double mi = 0.9 * 10 * double(tiny), vi = 0.999 * 1e-30;
  const double want = -(mi / (std::sqrt(vi) + 1e-20)) * 1e-8;
  for (std::size_t i = 0; i < w.size(); ++i) {
    INFO("w[" << i << "]");
    CHECK(double(w[i]) == doctest::Approx(want).epsilon(std::is_same_v<T, float> ? 1e-5 : 1e-12).scale(0));  // relative
  }
}

TEST_CASE("the fused loops decline strided, mixed-dtype and integer views") {
  ops::Engine& cpu = ops::engine(Device::cpu());
  const ops::AdamHyper adam{1e-3, 0.9, 0.999, 1e-8, 0, 0.1, 0.001};
  std::vector<float> w(8, 1), g(8, 1), m(8, 0), v(8, 0);
  std::vector<double> gd(8, 1);
  TensorView strided = view(w);
  strided.shape[0] = 4, strided.strides[0] = 2;
  CHECK_FALSE(cpu.adam_update(strided, view(g), view(m), view(v), adam));
  CHECK_FALSE(cpu.adam_update(view(w), view(gd), view(m), view(v), adam));
  CHECK_FALSE(cpu.sgd_update(view(w), view(gd), TensorView{}, {0.1, 0, 0}));
  std::vector<std::int32_t> wi(8, 1), gi(8, 1);
  CHECK_FALSE(cpu.sgd_update(ops::contiguous_view(wi.data(), DataType::int32, Shape{8}),
                             ops::contiguous_view(gi.data(), DataType::int32, Shape{8}), TensorView{}, {0.1, 0, 0}));
  CHECK(w == std::vector<float>(8, 1));  // nothing was written
}

}  // namespace ndgc
