// Note [Products through oneDNN]: float32 products through oneDNN's matmul,
// each operand layout against a double-precision loop, four threads at once,
// and the products ndgc's matmul sends there.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "ndgc/ndgc.hpp"
#include "ops/cpu/onednn_gemm.hpp"
#if NDGC_HAVE_ONEDNN
#include "ops/cpu/onednn_support.hpp"
#endif

namespace ndgc {
namespace {

using ops::cpu::MatrixRef;
using ops::cpu::OutRef;

// A rows × cols matrix stored with the given strides in a buffer of its own.
struct Stored {
  std::vector<float> data;
  MatrixRef ref;
};

Stored stored(std::int64_t rows, std::int64_t cols, std::int64_t row_stride, std::int64_t col_stride,
              std::uint32_t seed) {
  Stored s;
  const std::int64_t span = (rows - 1) * row_stride + (cols - 1) * col_stride + 1;
  s.data.assign(std::size_t(span), -7.0f);  // padding: wrong if read
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      s.data[std::size_t(i * row_stride + j * col_stride)] = float(int((i * 31 + j * 17 + seed) % 23) - 11) / 8.0f;
  s.ref = {s.data.data(), rows, cols, row_stride, col_stride};
  return s;
}

double at(const MatrixRef& x, std::int64_t i, std::int64_t j) { return x.data[i * x.row_stride + j * x.col_stride]; }

// c (+)= a · b through onednn_product, against a loop; padding of c untouched.
void check_product(const Stored& a, const Stored& b, std::int64_t c_stride, bool accumulate) {
  const std::int64_t m = a.ref.rows, k = a.ref.cols, n = b.ref.cols;
  std::vector<float> c(std::size_t((m - 1) * c_stride + n), 0.5f);
  const std::vector<float> before = c;
  REQUIRE(ops::cpu::onednn_product(a.ref, b.ref, OutRef{c.data(), m, n, c_stride}, accumulate));
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double want = accumulate ? 0.5 : 0.0;
      for (std::int64_t p = 0; p < k; ++p) want += at(a.ref, i, p) * at(b.ref, p, j);
      CHECK(c[std::size_t(i * c_stride + j)] == doctest::Approx(want).epsilon(1e-5));
    }
    for (std::int64_t j = n; j < c_stride && i + 1 < m; ++j) CHECK(c[std::size_t(i * c_stride + j)] == 0.5f);
  }
}

}  // namespace

TEST_CASE("oneDNN products: every operand layout, padded outputs, accumulation, against a loop") {
  if (!ops::cpu::onednn_enabled()) {
    MESSAGE("skipped: float32 products do not go to oneDNN in this build or on this CPU (NDGC_CPU_GEMM, AVX-512)");
    return;
  }
  const std::int64_t m = 37, k = 53, n = 70;
  SUBCASE("dense, row-major and transposed") {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        CAPTURE(ta);
        CAPTURE(tb);
        const Stored a = ta ? stored(m, k, 1, m, 1) : stored(m, k, k, 1, 1);
        const Stored b = tb ? stored(k, n, 1, k, 2) : stored(k, n, n, 1, 2);
        check_product(a, b, n, false);
      }
  }
  SUBCASE("tiles of wider matrices: padded rows and padded columns, copied first") {
    check_product(stored(m, k, k + 5, 1, 3), stored(k, n, n + 9, 1, 4), n, false);
    check_product(stored(m, k, 1, m + 3, 5), stored(k, n, 1, k + 2, 6), n, false);
  }
  SUBCASE("neither axis of unit stride: not served (matmul copies such operands before)") {
    const Stored a = stored(m, k, 2 * k, 2, 7), b = stored(k, n, n, 1, 8);
    std::vector<float> c(std::size_t(m * n), 0.5f);
    CHECK_FALSE(ops::cpu::onednn_product(a.ref, b.ref, OutRef{c.data(), m, n, n}, false));
    CHECK(c == std::vector<float>(std::size_t(m * n), 0.5f));
  }
  SUBCASE("a padded output, assigned and accumulated") {
    check_product(stored(m, k, k, 1, 9), stored(k, n, n, 1, 10), n + 11, false);
    check_product(stored(m, k, k, 1, 9), stored(k, n, n, 1, 10), n + 11, true);
    check_product(stored(m, k, k, 1, 9), stored(k, n, n, 1, 10), n, true);
  }
  SUBCASE("a single row and a single column (long enough to be served)") {
    check_product(stored(1, 512, 512, 1, 11), stored(512, 160, 160, 1, 12), 160, false);
    check_product(stored(160, 512, 512, 1, 13), stored(512, 1, 1, 1, 14), 1, false);
  }
}

TEST_CASE("oneDNN products: empty and small products are not served, and leave the output alone") {
  std::vector<float> a(4, 1.0f), b(4, 1.0f), c(4, 3.0f);
  CHECK_FALSE(ops::cpu::onednn_product({a.data(), 2, 0, 0, 1}, {b.data(), 0, 2, 2, 1}, {c.data(), 2, 2, 2}, false));
  CHECK_FALSE(ops::cpu::onednn_product({a.data(), 2, 2, 2, 1}, {b.data(), 2, 2, 2, 1}, {c.data(), 2, 2, 2}, false));
  CHECK(c == std::vector<float>(4, 3.0f));
}

#if NDGC_HAVE_ONEDNN
TEST_CASE("oneDNN's failures: out of memory is OutOfMemory, anything else an Error naming the call and the status") {
  CHECK_NOTHROW(ops::cpu::onednn::check(dnnl_success, "matmul", "execute"));
  CHECK_THROWS_WITH_AS(ops::cpu::onednn::check(dnnl_out_of_memory, "matmul", "execute"),
                       "matmul: oneDNN's execute failed: out_of_memory (status 1)", OutOfMemory);
  try {
    ops::cpu::onednn::check(dnnl_unimplemented, "conv2d", "primitive descriptor");
    FAIL("no throw");
  } catch (const OutOfMemory&) {
    FAIL("an unimplemented primitive is not out of memory");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "conv2d: oneDNN's primitive descriptor failed: unimplemented (status 3)");
  }
}
#endif

TEST_CASE("oneDNN products from four threads at once: each thread's own primitives, the same results") {
  if (!ops::cpu::onednn_enabled()) {
    MESSAGE("skipped: float32 products do not go to oneDNN in this build or on this CPU");
    return;
  }
  // Three shapes, one of them padded (copied), in a different order on each thread.
  const Stored a1 = stored(64, 96, 96, 1, 1), b1 = stored(96, 80, 80, 1, 2);
  const Stored a2 = stored(48, 130, 1, 48, 3), b2 = stored(130, 70, 90, 1, 4);
  const Stored a3 = stored(100, 64, 64, 1, 5), b3 = stored(64, 128, 1, 64, 6);
  struct Case {
    const Stored *a, *b;
    std::vector<float> want;
  };
  std::vector<Case> cases{{&a1, &b1, {}}, {&a2, &b2, {}}, {&a3, &b3, {}}};
  for (Case& c : cases) {
    c.want.assign(std::size_t(c.a->ref.rows * c.b->ref.cols), 0.0f);
    REQUIRE(ops::cpu::onednn_product(c.a->ref, c.b->ref, OutRef{c.want.data(), c.a->ref.rows, c.b->ref.cols, c.b->ref.cols},
                                     false));
  }
  std::atomic<int> mismatches{0}, unserved{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> out;
      for (int round = 0; round < 50; ++round) {
        const Case& c = cases[std::size_t((round + t) % 3)];
        out.assign(c.want.size(), -1.0f);
        if (!ops::cpu::onednn_product(c.a->ref, c.b->ref, OutRef{out.data(), c.a->ref.rows, c.b->ref.cols, c.b->ref.cols},
                                      false))
          ++unserved;
        else if (out != c.want)
          ++mismatches;
      }
    });
  for (std::thread& t : threads) t.join();
  CHECK(unserved == 0);
  CHECK(mismatches == 0);
}

TEST_CASE("ndgc's float32 matmul goes to oneDNN where it is enabled, with the same bits at 1 and 2 threads") {
  NDManager m = NDManager::new_base_manager("onednn-matmul-threads");
  set_random_seed(5);
  const int threads = num_threads();
  // 512 × 2048 × 300: cut into 16 column blocks, each padded (copied) for oneDNN.
  NDArray a = m.random_uniform({512, 300}), b = m.random_uniform({300, 2048});
  const std::uint64_t before = ops::cpu::onednn_products();
  set_num_threads(1);
  const std::vector<float> one = a.matmul(b).to_vector<float>();
  const std::uint64_t calls = ops::cpu::onednn_products() - before;
  set_num_threads(2);
  const std::vector<float> two = a.matmul(b).to_vector<float>();
  set_num_threads(threads);
  CHECK(one == two);
  CHECK(calls == (ops::cpu::onednn_enabled() ? 16u : 0u));
  // Against float64 Eigen: same values to float32's rounding.
  const std::vector<double> wide = a.to_type(DataType::float64).matmul(b.to_type(DataType::float64)).to_vector<double>();
  for (std::size_t i = 0; i < wide.size(); i += 997) CHECK(one[i] == doctest::Approx(wide[i]).epsilon(1e-5));
}

}  // namespace ndgc
