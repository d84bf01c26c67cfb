// Helpers shared by the ops-layer tests (tests/ops/*_test.cpp).
//
// Expected values are always computed here, independently of the library:
// by hand in the test, or by a plain C++ loop over row-major indices
// (ref_broadcast, ref_matmul). Comparing an op against the library's own
// output could not fail.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <ndgc/ndgc.hpp>

namespace ops_test {

using namespace ndgc;

// A fresh base manager per test case; closed when the test ends.
inline NDManager fresh(const std::string& name = "ops-test") { return NDManager::new_base_manager(name); }

// The bytes of a floating array's elements as doubles: equal bits, not just close values.
inline std::vector<char> bits(const NDArray& a) {
  std::vector<double> v = a.to_vector<double>();
  std::vector<char> b(v.size() * sizeof(double));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Elements as doubles, in row-major order (exact for every dtype but int64 past 2^53).
inline std::vector<double> values(const NDArray& a) { return a.to_vector<double>(); }

// Every element of `a` is within `tol` (absolute, or relative for large values) of `want`;
// the shape's element count must match too. NaN matches NaN; infinities match exactly.
inline void check_values(const NDArray& a, const std::vector<double>& want, double tol = 1e-6) {
  std::vector<double> got = values(a);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else if (std::isinf(want[i])) {
      CHECK(got[i] == want[i]);
    } else {
      CHECK(std::abs(got[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i])));
    }
  }
}

inline void check_shape(const NDArray& a, const Shape& want) {
  INFO("shape " << a.shape().to_string() << ", want " << want.to_string());
  CHECK(a.shape() == want);
}

// Row-major strides and index ↔ offset arithmetic for the reference loops.
inline std::vector<std::int64_t> unravel(std::int64_t flat, const Shape& shape) {
  std::vector<std::int64_t> idx(std::size_t(shape.rank()));
  for (int i = shape.rank() - 1; i >= 0; --i) {
    idx[std::size_t(i)] = shape[i] == 0 ? 0 : flat % shape[i];
    flat = shape[i] == 0 ? 0 : flat / shape[i];
  }
  return idx;
}

// The row-major offset in an array of `shape` of the element that broadcasting
// maps to `out_idx` (an index into the broadcast result of rank >= shape's).
inline std::int64_t broadcast_offset(const std::vector<std::int64_t>& out_idx, const Shape& shape) {
  const int shift = int(out_idx.size()) - shape.rank();
  std::int64_t off = 0;
  for (int i = 0; i < shape.rank(); ++i) off = off * shape[i] + (shape[i] == 1 ? 0 : out_idx[std::size_t(i + shift)]);
  return off;
}

// NumPy's result of f(x, y) over broadcast shapes, by index arithmetic.
inline std::vector<double> ref_broadcast(const std::vector<double>& x, const Shape& xs, const std::vector<double>& y,
                                         const Shape& ys, const Shape& out,
                                         const std::function<double(double, double)>& f) {
  std::vector<double> r(std::size_t(out.size()));
  for (std::int64_t i = 0; i < out.size(); ++i) {
    auto idx = unravel(i, out);
    r[std::size_t(i)] = f(x[std::size_t(broadcast_offset(idx, xs))], y[std::size_t(broadcast_offset(idx, ys))]);
  }
  return r;
}

// A naive triple loop: a (m×k) times b (k×n), row-major.
inline std::vector<double> ref_matmul(const std::vector<double>& a, const std::vector<double>& b, std::int64_t m,
                                      std::int64_t k, std::int64_t n) {
  std::vector<double> c(std::size_t(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < k; ++p) s += a[std::size_t(i * k + p)] * b[std::size_t(p * n + j)];
      c[std::size_t(i * n + j)] = s;
    }
  return c;
}

// Deterministic pseudo-random doubles in [lo, hi) that do not come from the library.
inline std::vector<double> test_data(std::size_t n, std::uint64_t seed, double lo = -2, double hi = 2) {
  std::vector<double> v(n);
  std::uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (double& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = lo + (hi - lo) * double(s >> 11) * 0x1.0p-53;
  }
  return v;
}

// An array of dtype T holding `v` (converted) with `shape`.
template <class T>
NDArray make(const ManagerRef& m, const std::vector<double>& v, const Shape& shape) {
  std::vector<T> typed(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) typed[i] = static_cast<T>(v[i]);
  return m.create(typed, shape);
}

inline NDArray make_bool(const ManagerRef& m, const std::vector<int>& v, const Shape& shape) {
  std::unique_ptr<bool[]> b(new bool[v.size()]);
  for (std::size_t i = 0; i < v.size(); ++i) b[i] = v[i] != 0;
  return m.create(std::span<const bool>(b.get(), v.size()), shape);
}

// Records host bytes in use and a manager's array count; `unchanged()` says
// whether both are back where they were (a failed op must leave nothing behind).
class Footprint {
 public:
  explicit Footprint(const ManagerRef& m)
      : m_(m), bytes_(memory::stats(Device::cpu()).current_bytes), arrays_(m.array_count()) {}
  void check_unchanged() const {
    CHECK(memory::stats(Device::cpu()).current_bytes == bytes_);
    CHECK(m_.array_count() == arrays_);
  }

 private:
  ManagerRef m_;
  std::uint64_t bytes_;
  std::size_t arrays_;
};

}  // namespace ops_test
