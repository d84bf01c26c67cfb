// Tests src/ops/index_math.hpp and src/ops/random_stream.hpp on the host: the
// same functions the CUDA kernels run (NDGC_HD), checked against direct
// coordinate arithmetic and against the CPU engine.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include <ndgc/ndgc.hpp>

#include "ops/engine.hpp"
#include "ops/index_math.hpp"
#include "ops/random_stream.hpp"

using namespace ndgc;
using namespace ndgc::ops;

namespace {

TensorView view(std::vector<std::int64_t> shape, std::vector<std::int64_t> strides) {
  TensorView v;
  v.rank = int(shape.size());
  for (int i = 0; i < v.rank; ++i) {
    v.shape[i] = shape[std::size_t(i)];
    v.strides[i] = strides[std::size_t(i)];
  }
  return v;
}

// Offset of row-major element `linear` computed from coordinates, the slow way.
std::int64_t slow_offset(const TensorView& v, std::int64_t linear) {
  std::int64_t off = 0;
  for (int d = v.rank - 1; d >= 0; --d) {
    off += (linear % v.shape[d]) * v.strides[d];
    linear /= v.shape[d];
  }
  return off;
}

}  // namespace

TEST_CASE("coalesce merges contiguous axes and keeps broadcast and transposed ones apart") {
  const TensorView a = view({2, 3, 4}, {12, 4, 1});
  const TensorView* one[1] = {&a};
  index::Strided<1> w = index::coalesce(one);
  CHECK(w.rank == 1);
  CHECK(w.shape[0] == 24);
  CHECK(w.contiguous());

  const TensorView out = view({5, 1, 3}, {3, 3, 1});
  const TensorView bias = view({5, 1, 3}, {0, 0, 1});  // a (3,) row broadcast over 5 rows
  const TensorView* two[2] = {&out, &bias};
  index::Strided<2> b = index::coalesce(two);
  CHECK(b.rank == 2);  // the length-1 axis is gone; the broadcast one cannot merge
  CHECK(b.shape[0] == 5);
  CHECK(b.strides[1][0] == 0);
  CHECK_FALSE(b.contiguous());

  const TensorView t = view({3, 4}, {1, 3});  // a transposed (4, 3)
  const TensorView* tt[1] = {&t};
  CHECK(index::coalesce(tt).rank == 2);
}

TEST_CASE("offsets agree with coordinate arithmetic for strided, sliced and broadcast views") {
  const TensorView o = view({3, 2, 4}, {8, 4, 1});
  const TensorView s = view({3, 2, 4}, {1, 12, 3});   // permuted
  const TensorView b = view({3, 2, 4}, {0, 5, 0});    // broadcast
  const TensorView k = view({3, 2, 4}, {40, 10, 2});  // a step-2 slice
  const TensorView* v[4] = {&o, &s, &b, &k};
  const index::Strided<4> w = index::coalesce(v);
  for (std::int64_t i = 0; i < o.size(); ++i) {
    std::int64_t off[4];
    index::offsets(w, i, off);
    CHECK(off[0] == slow_offset(o, i));
    CHECK(off[1] == slow_offset(s, i));
    CHECK(off[2] == slow_offset(b, i));
    CHECK(off[3] == slow_offset(k, i));
  }
}

TEST_CASE("offsets use 64-bit arithmetic past 2^31 elements") {
  const TensorView big = view({std::int64_t(1) << 20, std::int64_t(1) << 14}, {std::int64_t(1) << 15, 2});
  const TensorView* v[1] = {&big};
  const index::Strided<1> w = index::coalesce(v);
  const std::int64_t last = big.size() - 1;  // 2^34 - 1
  std::int64_t off[1];
  index::offsets(w, last, off);
  CHECK(off[0] == slow_offset(big, last));
  CHECK(off[0] > (std::int64_t(1) << 33));
}

TEST_CASE("a reduction split visits every element once, rows in output order") {
  const TensorView in = view({2, 3, 1, 4}, {1, 2, 100, 6});  // a permuted layout
  const std::uint32_t axes = 0b1010;                          // reduce axes 1 and 3
  const index::ReduceSplit s = index::split_reduction(in, axes);
  CHECK(s.rows == 2);
  CHECK(s.cols == 12);
  std::vector<int> seen(24, 0);
  for (std::int64_t r = 0; r < s.rows; ++r)
    for (std::int64_t c = 0; c < s.cols; ++c) {
      const std::int64_t off = s.row_offset(r) + s.col_offset(c);
      REQUIRE(off >= 0);
      REQUIRE(off < 24);
      ++seen[std::size_t(off)];
      CHECK(off % 2 == r);  // axis 0 (stride 1) is the kept one
    }
  for (int n : seen) CHECK(n == 1);

  const index::ReduceSplit all = index::split_reduction(view({}, {}), 0);
  CHECK(all.rows == 1);
  CHECK(all.cols == 1);
}

TEST_CASE("the shared random streams are the CPU engine's") {
  NDManager m = NDManager::new_base_manager("rng");
  set_random_seed(7);
  NDArray u = m.random_uniform({64}, -2.0, 3.0);
  NDArray n = m.random_normal({64}, 1.0, 0.5, DataType::float64);
  NDArray k = m.random_uniform({64}, -5.0, 5.0, DataType::int32);
  std::vector<float> uv = u.to_vector<float>();
  std::vector<double> nv = n.to_vector<double>();
  std::vector<std::int32_t> kv = k.to_vector<std::int32_t>();
  // The draws of one seed follow each other: 64 uniforms, then 2 × 64 normal counters, then 64 integers.
  for (std::uint64_t i = 0; i < 64; ++i) {
    CHECK(uv[i] == random::uniform_at<float>(-2.0, 3.0, 7, i));
    CHECK(nv[i] == random::normal_at(1.0, 0.5, 7, 64, i));
    CHECK(kv[i] == random::uniform_at<std::int32_t>(-5.0, 5.0, 7, 64 + 128 + i));
  }
  CHECK(random::uniform_at<float>(0.0, 1.0, 1, 3) != random::uniform_at<float>(0.0, 1.0, 1, 4));
}

TEST_CASE("keeps() decides dropout as unit() >= p does, at the boundaries too") {
  // p on the 2^-53 grid of unit(), one step off it either way, and ordinary values
  std::vector<double> ps = {0.0, 0x1.0p-53, 0.1, 0.25, 0.5, 0.75, 1.0 - 0x1.0p-53};
  for (std::uint64_t c = 0; c < 8; ++c) {
    const double u = random::unit(99, c);
    ps.push_back(u);
    ps.push_back(std::nextafter(u, 1.0));
    ps.push_back(std::nextafter(u, 0.0));
  }
  for (double p : ps) {
    const std::uint64_t threshold = random::keep_threshold(p);
    for (std::uint64_t c = 0; c < 2000; ++c) {
      INFO("p " << p << ", counter " << c);
      CHECK(random::keeps(99, c, threshold) == (random::unit(99, c) >= p));
    }
  }
  // the element whose draw is p itself is kept; one ulp above its draw, dropped
  CHECK(random::keeps(99, 3, random::keep_threshold(random::unit(99, 3))));
  CHECK_FALSE(random::keeps(99, 3, random::keep_threshold(std::nextafter(random::unit(99, 3), 1.0))));
}
