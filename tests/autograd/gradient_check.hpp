// The central-difference gradient check shared by gradient_check_test.cpp
// and layer_rules_test.cpp: check(shapes, f) builds float64 leaves of those
// shapes, computes loss = sum(f(inputs) * w) with fixed random weights w,
// backpropagates once and compares each input's gradient, element by
// element, with (loss(x + h) - loss(x - h)) / 2h: relative error at most
// 1e-6 (absolute below magnitude 1).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include <ndgc/autograd.hpp>
#include <ndgc/ndgc.hpp>

namespace ndgc::gradcheck {


using Inputs = std::vector<NDArray>;
using Fn = std::function<NDArray(const Inputs&)>;

enum class Values { signed_, positive, distinct };

inline std::vector<double> draw(std::int64_t n, Values kind, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.2, 1.0);
  std::bernoulli_distribution sign(0.5);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (auto& x : v) {
    x = u(rng);
    if (kind == Values::positive) x += 0.3;
    else if (sign(rng)) x = -x;
  }
  if (kind == Values::distinct) {  // well-separated values: no ties for max/min
    std::uniform_real_distribution<double> jitter(0.0, 0.05);
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = (v[i] < 0 ? -1.0 : 1.0) * (0.1 + 0.37 * double(i % 97)) + jitter(rng);
  }
  return v;
}

inline double loss_value(ManagerRef m, const std::vector<Shape>& shapes, const std::vector<std::vector<double>>& values,
                  const Fn& f, const std::vector<double>& weights, const Shape& out_shape) {
  NDManager step = m.new_sub_manager("eval");
  Inputs in;
  for (std::size_t i = 0; i < shapes.size(); ++i) in.push_back(step.create(values[i], shapes[i]));
  NDArray out = f(in);
  NDArray w = step.create(weights, out_shape);
  return out.mul(w).sum().item<double>();
}

// Checks d sum(f(x) * w) / dx for every input against central differences.
inline void check(const std::vector<Shape>& shapes, const Fn& f, Values kind = Values::signed_, std::uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  NDManager m = NDManager::new_base_manager("gradcheck");
  std::vector<std::vector<double>> values;
  Inputs leaves;
  for (const Shape& s : shapes) {
    values.push_back(draw(s.size(), kind, rng));
    leaves.push_back(m.create(values.back(), s));
    leaves.back().set_requires_gradient(true);
  }
  Shape out_shape;
  std::vector<double> weights;
  {
    GradientCollector collector;
    NDArray out = f(leaves);
    REQUIRE(out.dtype() == DataType::float64);
    out_shape = out.shape();
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (std::int64_t i = 0; i < out_shape.size(); ++i) weights.push_back(u(rng));
    NDArray loss = out.mul(m.create(weights, out_shape)).sum();
    collector.backward(loss);
  }
  const double h = 1e-6;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    std::vector<double> analytic = leaves[i].gradient().to_vector<double>();
    REQUIRE(analytic.size() == values[i].size());
    for (std::size_t k = 0; k < values[i].size(); ++k) {
      const double x = values[i][k];
      values[i][k] = x + h;
      const double up = loss_value(m, shapes, values, f, weights, out_shape);
      values[i][k] = x - h;
      const double down = loss_value(m, shapes, values, f, weights, out_shape);
      values[i][k] = x;
      const double numeric = (up - down) / (2 * h);
      const double error = std::abs(analytic[k] - numeric) / std::max({1.0, std::abs(analytic[k]), std::abs(numeric)});
      INFO("input ", i, " element ", k, ": autograd ", analytic[k], ", finite differences ", numeric);
      CHECK(error <= 1e-6);
    }
  }
}

}  // namespace ndgc::gradcheck
