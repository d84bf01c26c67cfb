// The GPU suites' comparison: an array computed on gpu(0) against the same
// computation on the CPU.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <ndgc/ndgc.hpp>

namespace ndgc::gpu_test {

// Same shape and dtype, `g` on gpu(0), and values within `tolerance`
// relative to (1 + |cpu|) (0: equal), NaN matching NaN.
inline void check_same(const NDArray& c, const NDArray& g, double tolerance, const std::string& what) {
  INFO(what);
  REQUIRE(g.device() == Device::gpu(0));
  REQUIRE(c.shape() == g.shape());
  REQUIRE(c.dtype() == g.dtype());
  const std::vector<double> x = c.to_vector<double>(), y = g.to_vector<double>();
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("element " << i << ": cpu " << x[i] << " gpu " << y[i]);
    if (std::isnan(x[i]))
      CHECK(std::isnan(y[i]));
    else
      CHECK(std::abs(x[i] - y[i]) <= tolerance * (1 + std::abs(x[i])));
  }
}

}  // namespace ndgc::gpu_test
