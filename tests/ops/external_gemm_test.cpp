// external_sgemm (src/ops/cpu/external_gemm.hpp, Note [oneDNN's sgemm for
// float32 products]): every layout of the operands, accumulation and padded
// leading dimensions against a double-precision reference; a build or a
// process without it says so and computes nothing. The same-bits rule for
// the products that go through it: tests/ops/parallel_kernels_test.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ops/cpu/external_gemm.hpp"

namespace {

using ndgc::ops::cpu::external_sgemm;
using ndgc::ops::cpu::external_sgemm_available;

// A matrix of rows × cols stored row-major (or column-major when `trans`)
// with leading dimension ld, filled with small random values.
struct Stored {
  std::int64_t rows, cols, ld;
  bool trans;
  std::vector<float> data;
  Stored(std::int64_t r, std::int64_t c, bool t, std::int64_t pad, std::mt19937& g)
      : rows(r), cols(c), ld((t ? r : c) + pad), trans(t), data(std::size_t((t ? c : r) * ld)) {
    std::uniform_real_distribution<float> u(-1, 1);
    for (float& x : data) x = u(g);
  }
  float at(std::int64_t i, std::int64_t j) const { return data[std::size_t(trans ? j * ld + i : i * ld + j)]; }
};

}  // namespace

TEST_CASE("external_sgemm: every layout, accumulation and padded leading dimensions match a double reference") {
  if (!external_sgemm_available()) {
    std::vector<float> a(4, 1), b(4, 1), c(4, 0);
    CHECK_FALSE(external_sgemm(false, false, 2, 2, 2, a.data(), 2, b.data(), 2, false, c.data(), 2));
    CHECK(c[0] == 0);  // nothing computed
    MESSAGE("no external GEMM in this build or process: Eigen computes every product");
    return;
  }
  std::mt19937 g(7);
  const std::int64_t m = 37, n = 53, k = 71;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool accumulate : {false, true})
        for (std::int64_t pad : {0, 5}) {
          CAPTURE(ta);
          CAPTURE(tb);
          CAPTURE(accumulate);
          CAPTURE(pad);
          const Stored a(m, k, ta, pad, g), b(k, n, tb, pad, g);
          const std::int64_t ldc = n + pad;
          std::vector<float> c(std::size_t(m * ldc), 0.5f);
          REQUIRE(external_sgemm(ta, tb, m, n, k, a.data.data(), a.ld, b.data.data(), b.ld, accumulate, c.data(), ldc));
          double worst = 0;
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
              double want = accumulate ? 0.5 : 0.0;
              for (std::int64_t p = 0; p < k; ++p) want += double(a.at(i, p)) * double(b.at(p, j));
              worst = std::max(worst, std::abs(double(c[std::size_t(i * ldc + j)]) - want));
            }
          CHECK(worst < 1e-4);
          for (std::int64_t i = 0; i < m; ++i)  // the padding of C is left alone
            for (std::int64_t j = n; j < ldc; ++j) CHECK(c[std::size_t(i * ldc + j)] == 0.5f);
        }
}

TEST_CASE("external_sgemm: a leading dimension too small for its matrix is refused, not read past") {
  if (!external_sgemm_available()) return;
  std::vector<float> a(6, 1), b(6, 1), c(4, 0);
  CHECK_FALSE(external_sgemm(false, false, 2, 2, 3, a.data(), 2, b.data(), 2, false, c.data(), 2));  // lda < k
}
