// 16-bit matrix products (ops/cpu/bf16_matmul.cpp, and the widening path):
// float16 products are the float32 product rounded once; bfloat16 products
// on AVX512-BF16 are within a unit in the last place of it (their sums run in
// another order, subnormals flushed), for every shape class (odd k, partial
// tiles and panels, transposed and batched views, empty k), with the same
// bits at 1, 2 and 3 threads.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <vector>

#include <ndgc/ndgc.hpp>

#include "support/cpu_features.hpp"

namespace ndgc {
namespace {

// got (16-bit) against the float32 product of the same values: exact for
// float16, and for bfloat16 without AVX512-BF16; else within 2^-7 of |want|
// plus 2^-16 of the sum of |a||b| (cancellation).
void check_product(const NDArray& a, const NDArray& b) {
  const DataType t = a.dtype();
  const NDArray got = a.matmul(b);
  REQUIRE(got.dtype() == t);
  const NDArray a32 = a.to_type(DataType::float32), b32 = b.to_type(DataType::float32);
  const std::vector<float> g = got.to_type(DataType::float32).to_vector<float>();
  const std::vector<float> w = a32.matmul(b32).to_type(t).to_type(DataType::float32).to_vector<float>();
  const std::vector<float> mag = a32.abs().matmul(b32.abs()).to_vector<float>();
  REQUIRE(g.size() == w.size());
  const bool exact = t == DataType::float16 || !support::cpu_has_avx512_bf16();
  for (std::size_t i = 0; i < g.size(); ++i) {
    CAPTURE(i);
    if (exact) CHECK(g[i] == w[i]);
    else CHECK(std::fabs(g[i] - w[i]) <= 0x1p-7 * std::fabs(w[i]) + 0x1p-16 * mag[i]);
  }
}

NDArray values16(NDManager& m, const Shape& shape, DataType t) { return m.random_uniform(shape, -2, 2).to_type(t); }

}  // namespace

TEST_CASE("16-bit products: every shape class against the float32 product") {
  MESSAGE("AVX512-BF16 products: " << std::string(support::cpu_has_avx512_bf16() ? "yes" : "no (widened)"));
  NDManager m = NDManager::new_base_manager("bf16-matmul");
  set_random_seed(31);
  for (DataType t : {DataType::bfloat16, DataType::float16}) {
    CAPTURE(to_string(t));
    for (auto dims : {std::array<std::int64_t, 3>{1, 1, 1}, {6, 2, 32}, {7, 3, 33}, {13, 64, 31}, {48, 40, 48},
                      {100, 129, 70}}) {  // CAPTURE captures each: no structured binding
      const std::int64_t rows = dims[0], inner = dims[1], cols = dims[2];
      CAPTURE(rows);
      CAPTURE(inner);
      CAPTURE(cols);
      check_product(values16(m, {rows, inner}, t), values16(m, {inner, cols}, t));
      check_product(values16(m, {inner, rows}, t).transpose(), values16(m, {cols, inner}, t).transpose());
    }
    check_product(values16(m, {3, 5, 9}, t), values16(m, {3, 9, 11}, t));  // batched
    check_product(values16(m, {2, 5, 9}, t), values16(m, {9, 11}, t));     // one side broadcast
    check_product(values16(m, {6, 7}, t), values16(m, {4, 7, 33}, t));     // a weight every element shares
    check_product(values16(m, {4, 6, 7}, t), values16(m, {4, 33, 7}, t).transpose({0, 2, 1}));  // column-major b
    check_product(values16(m, {17}, t), values16(m, {17, 4}, t));          // a vector
    const NDArray empty = values16(m, {4, 0}, t).matmul(values16(m, {0, 3}, t));
    CHECK(empty.to_type(DataType::float32).to_vector<float>() == std::vector<float>(12, 0.f));
  }
}

TEST_CASE("16-bit products: the same bits at 1, 2 and 3 threads") {
  NDManager m = NDManager::new_base_manager("bf16-matmul-threads");
  set_random_seed(32);
  const NDArray a = values16(m, {300, 257}, DataType::bfloat16), b = values16(m, {257, 190}, DataType::bfloat16);
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    runs.push_back(a.matmul(b).to_type(DataType::float32).to_vector<float>());
  }
  set_num_threads(1);
  CHECK(runs[0] == runs[1]);
  CHECK(runs[0] == runs[2]);
}

TEST_CASE("16-bit products: a batch spread over the pool gives each element the bits it gets alone, at any thread count") {
  // A convolution's products: a weight every image shares (packed once), the
  // columns transposed (packed by words) and odd k; each element on one
  // thread, against the same product made alone (spread over the pool).
  NDManager m = NDManager::new_base_manager("bf16-matmul-batch");
  set_random_seed(33);
  const NDArray w = values16(m, {10, 27}, DataType::bfloat16);
  const NDArray cols = values16(m, {5, 70, 27}, DataType::bfloat16).transpose({0, 2, 1});  // [5, 27, 70]
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    runs.push_back(w.matmul(cols).to_type(DataType::float32).to_vector<float>());
  }
  std::vector<float> alone;
  for (std::int64_t i = 0; i < 5; ++i) {
    const std::vector<float> one = w.matmul(cols.get(NDIndex().add_index(i))).to_type(DataType::float32).to_vector<float>();
    alone.insert(alone.end(), one.begin(), one.end());
  }
  set_num_threads(1);
  CHECK(runs[0] == alone);
  CHECK(runs[1] == alone);
  CHECK(runs[2] == alone);
}

}  // namespace ndgc
