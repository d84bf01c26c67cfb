// Tests src/ops/reduce_math.hpp and the row split of src/ops/index_math.hpp
// (Note [Split rows]) on the host: the code the CUDA reductions run. A row
// cut into chunks, each reduced as a block reduces it and the partials then
// reduced in chunk order, gives what one pass gives: the same max, min and
// first-best index (NaN first, ties to the first, across chunk boundaries
// too), the same wrapping integer sum, and a float sum or mean within rounding.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "ops/index_math.hpp"
#include "ops/reduce_math.hpp"

using namespace ndgc;
using namespace ndgc::ops;
using reduce_math::Reduction;
using reduce_math::Slot;

namespace {

constexpr int kThreads = 256;  // as gpu/launch.cuh

// Columns [begin, end) reduced as a block of kThreads does: thread t joins
// columns t, t + kThreads, ...; then a tree over the threads.
template <class T, class Leaf>
Slot<T> block_reduce(const Reduction& how, std::int64_t begin, std::int64_t end, Leaf leaf) {
  std::vector<Slot<T>> mine(kThreads, Slot<T>{T(0), 0, false});
  for (int t = 0; t < kThreads; ++t)
    for (std::int64_t c = begin + t; c < end; c += kThreads)
      mine[std::size_t(t)] = how.join(mine[std::size_t(t)], leaf(c));
  for (int width = kThreads / 2; width > 0; width /= 2)
    for (int t = 0; t < width; ++t) mine[std::size_t(t)] = how.join(mine[std::size_t(t)], mine[std::size_t(t + width)]);
  return mine[0];
}

// A row's result in one pass and in two through `chunks`, as the kernels order them.
template <class Out, class T>
std::pair<Out, Out> one_and_two_pass(const Reduction& how, const std::vector<T>& x,
                                     const index::ColumnChunks& chunks) {
  auto leaf = [&](std::int64_t c) { return Slot<T>{x[std::size_t(c)], c, true}; };
  const std::int64_t n = std::int64_t(x.size());
  const Slot<T> one = block_reduce<T>(how, 0, n, leaf);
  std::vector<Slot<T>> partial;
  for (std::int64_t k = 0; k < chunks.count; ++k)
    partial.push_back(block_reduce<T>(how, chunks.begin(k), chunks.end(k, n), leaf));
  const Slot<T> two = block_reduce<T>(how, 0, chunks.count, [&](std::int64_t k) { return partial[std::size_t(k)]; });
  return {how.result<Out>(one, n), how.result<Out>(two, n)};
}

}  // namespace

TEST_CASE("chunk_columns cuts few long rows into non-empty chunks of at least min_chunk, covering every column") {
  struct Case {
    std::int64_t rows, cols, target, min_chunk;
  };
  const std::vector<Case> cases = {{1, 1 << 20, 1024, 4096}, {1, 8192, 1024, 4096},   {1, 8191, 1024, 4096},
                                   {3, 100003, 1024, 4096},  {1000, 1 << 20, 1024, 4096}, {1, 1 << 30, 1024, 4096},
                                   {7, 12345, 64, 100},      {1, 200, 1000, 100}};
  for (const Case& c : cases) {
    CAPTURE(c.rows);
    CAPTURE(c.cols);
    const index::ColumnChunks k = index::chunk_columns(c.rows, c.cols, c.target, c.min_chunk);
    REQUIRE(k.count >= 1);
    CHECK(k.begin(0) == 0);
    CHECK(k.end(k.count - 1, c.cols) == c.cols);
    for (std::int64_t i = 0; i < k.count; ++i) {
      CHECK(k.end(i, c.cols) > k.begin(i));                                      // not empty
      if (i + 1 < k.count) CHECK(k.end(i, c.cols) == k.begin(i + 1));            // adjacent
      if (k.count > 1 && i + 1 < k.count) CHECK(k.end(i, c.cols) - k.begin(i) >= c.min_chunk);
    }
    if (k.count > 1) {
      CHECK(c.rows < c.target);
      CHECK(c.rows * (k.count - 1) < c.target);  // no more chunks than it takes to reach the target
    }
  }
  // Not cut: enough rows already, or a row too short for two chunks.
  CHECK(index::chunk_columns(1024, 1 << 20, 1024, 4096).count == 1);
  CHECK(index::chunk_columns(1, 8191, 1024, 4096).count == 1);
  CHECK(index::chunk_columns(1, 8192, 1024, 4096).count == 2);
  CHECK(index::chunk_columns(1, 1 << 20, 1024, 4096).count == 256);  // every chunk 4096 long
  CHECK(index::chunk_columns(2, 1 << 30, 1024, 4096).count == 512);  // 1024 blocks in all
}

TEST_CASE("a split row reduces to what one pass gives: max, min, sum, wrapping integer sum") {
  const index::ColumnChunks chunks = index::chunk_columns(1, 100000, 1024, 4096);
  REQUIRE(chunks.count > 2);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1000, 1000);
  std::vector<float> x(100000);
  for (float& v : x) v = u(rng);
  for (Reduce op : {Reduce::max, Reduce::min, Reduce::sum, Reduce::mean}) {
    CAPTURE(name_of(op));
    auto [one, two] = one_and_two_pass<float>(Reduction{op}, x, chunks);
    if (op == Reduce::sum || op == Reduce::mean) {
      double exact = 0;
      for (float v : x) exact += v;
      if (op == Reduce::mean) exact /= double(x.size());
      CHECK(two == doctest::Approx(exact).epsilon(1e-4));
      CHECK(one == doctest::Approx(exact).epsilon(1e-4));
    } else {
      CHECK(two == one);
    }
  }
  // A NaN anywhere, a chunk's first column included, wins max and min.
  for (std::int64_t at : {std::int64_t(0), chunks.begin(1), chunks.end(1, 100000) - 1, std::int64_t(99999)}) {
    std::vector<float> y = x;
    y[std::size_t(at)] = std::numeric_limits<float>::quiet_NaN();
    for (Reduce op : {Reduce::max, Reduce::min})
      CHECK(std::isnan(one_and_two_pass<float>(Reduction{op}, y, chunks).second));
  }
  // Signed integer sums wrap, split or not.
  std::vector<std::int32_t> big(100000, std::numeric_limits<std::int32_t>::max() / 3);
  big[5] = -17;
  std::uint32_t wrapped = 0;
  for (std::int32_t v : big) wrapped += std::uint32_t(v);
  auto [one, two] = one_and_two_pass<std::int32_t>(Reduction{Reduce::sum}, big, chunks);
  CHECK(two == std::int32_t(wrapped));
  CHECK(one == two);
}

TEST_CASE("a split row's arg max/min is the first best index, also when the ties or NaN straddle chunks") {
  const std::int64_t n = 50000;
  const index::ColumnChunks chunks = index::chunk_columns(1, n, 1024, 4096);
  REQUIRE(chunks.count > 2);
  std::vector<double> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) x[std::size_t(i)] = double((i * 7919) % 1000);  // many ties
  for (bool max : {true, false}) {
    CAPTURE(max);
    const Reduction how{Reduce::max, true, max};
    // The first best, found the slow way.
    std::int64_t first = 0;
    for (std::int64_t i = 1; i < n; ++i)
      if (max ? x[std::size_t(i)] > x[std::size_t(first)] : x[std::size_t(i)] < x[std::size_t(first)]) first = i;
    auto [one, two] = one_and_two_pass<std::int64_t>(how, x, chunks);
    CHECK(one == first);
    CHECK(two == first);

    // A best value placed last in chunk 1 and first in chunk 2: the earlier wins.
    std::vector<double> y = x;
    const double best = max ? 1e9 : -1e9;
    y[std::size_t(chunks.end(1, n) - 1)] = best;
    y[std::size_t(chunks.begin(2))] = best;
    CHECK(one_and_two_pass<std::int64_t>(how, y, chunks).second == chunks.end(1, n) - 1);

    // Two NaN in different chunks: the first NaN, whatever the values.
    y[std::size_t(chunks.begin(2) + 5)] = std::numeric_limits<double>::quiet_NaN();
    y[std::size_t(chunks.begin(1) + 3)] = std::numeric_limits<double>::quiet_NaN();
    CHECK(one_and_two_pass<std::int64_t>(how, y, chunks).second == chunks.begin(1) + 3);
  }
}
