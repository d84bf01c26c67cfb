// Tests src/ops/reduce_math.hpp and the row split of src/ops/index_math.hpp
// (Note [Split rows]) on the host: the code the CUDA reductions run. A row
// cut into chunks, each reduced as a block reduces it and the partials then
// reduced in chunk order, gives what one pass gives: the same max, min and
// first-best index (NaN first, ties to the first, across chunk boundaries
// too), the same wrapping integer sum, and a float sum within rounding.
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
using reduce_math::Slot;

namespace {

constexpr int kThreads = 256;  // as gpu/launch.cuh

// Columns [begin, end) reduced as a block of kThreads does: thread t folds
// columns t, t + kThreads, ...; then a tree over the threads.
template <class T, class Leaf, class Merge>
Slot<T> block_reduce(std::int64_t begin, std::int64_t end, Leaf leaf, Merge merge) {
  std::vector<Slot<T>> mine(kThreads, Slot<T>{T(0), 0, false});
  for (int t = 0; t < kThreads; ++t)
    for (std::int64_t c = begin + t; c < end; c += kThreads) mine[std::size_t(t)] = merge(mine[std::size_t(t)], leaf(c));
  for (int width = kThreads / 2; width > 0; width /= 2)
    for (int t = 0; t < width; ++t) mine[std::size_t(t)] = merge(mine[std::size_t(t)], mine[std::size_t(t + width)]);
  return mine[0];
}

// One pass over the row, and two through `chunks`; both as the kernels order them.
template <class T, class Merge>
std::pair<Slot<T>, Slot<T>> one_and_two_pass(const std::vector<T>& x, bool arg, const index::ColumnChunks& chunks,
                                             Merge merge) {
  auto leaf = [&](std::int64_t c) { return Slot<T>{x[std::size_t(c)], arg ? c : 0, true}; };
  const std::int64_t n = std::int64_t(x.size());
  const Slot<T> one = block_reduce<T>(0, n, leaf, merge);
  std::vector<Slot<T>> partial;
  for (std::int64_t k = 0; k < chunks.count; ++k)
    partial.push_back(block_reduce<T>(chunks.begin(k), chunks.end(k, n), leaf, merge));
  const Slot<T> two =
      block_reduce<T>(0, chunks.count, [&](std::int64_t k) { return partial[std::size_t(k)]; }, merge);
  return {one, two};
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
  for (Reduce op : {Reduce::max, Reduce::min, Reduce::sum}) {
    CAPTURE(name_of(op));
    auto merge = [op](Slot<float> a, Slot<float> b) { return reduce_math::merge(op, a, b); };
    auto [one, two] = one_and_two_pass(x, false, chunks, merge);
    if (op == Reduce::sum) {
      double exact = 0;
      for (float v : x) exact += v;
      CHECK(two.value == doctest::Approx(exact).epsilon(1e-4));
      CHECK(one.value == doctest::Approx(exact).epsilon(1e-4));
    } else {
      CHECK(two.value == one.value);
    }
  }
  // A NaN anywhere, a chunk's first column included, wins max and min.
  for (std::int64_t at : {std::int64_t(0), chunks.begin(1), chunks.end(1, 100000) - 1, std::int64_t(99999)}) {
    std::vector<float> y = x;
    y[std::size_t(at)] = std::numeric_limits<float>::quiet_NaN();
    for (Reduce op : {Reduce::max, Reduce::min}) {
      auto merge = [op](Slot<float> a, Slot<float> b) { return reduce_math::merge(op, a, b); };
      CHECK(std::isnan(one_and_two_pass(y, false, chunks, merge).second.value));
    }
  }
  // Signed integer sums wrap, split or not.
  std::vector<std::int32_t> big(100000, std::numeric_limits<std::int32_t>::max() / 3);
  big[5] = -17;
  auto sum = [](Slot<std::int32_t> a, Slot<std::int32_t> b) { return reduce_math::merge(Reduce::sum, a, b); };
  std::uint32_t wrapped = 0;
  for (std::int32_t v : big) wrapped += std::uint32_t(v);
  auto [one, two] = one_and_two_pass(big, false, chunks, sum);
  CHECK(two.value == std::int32_t(wrapped));
  CHECK(one.value == two.value);
  CHECK(reduce_math::finish(Reduce::mean, Slot<double>{10.0, 0, true}, 4) == 2.5);
}

TEST_CASE("a split row's arg max/min is the first best index, also when the ties or NaN straddle chunks") {
  const std::int64_t n = 50000;
  const index::ColumnChunks chunks = index::chunk_columns(1, n, 1024, 4096);
  REQUIRE(chunks.count > 2);
  std::vector<double> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) x[std::size_t(i)] = double((i * 7919) % 1000);  // many ties
  for (bool max : {true, false}) {
    CAPTURE(max);
    auto better = [max](Slot<double> a, Slot<double> b) { return reduce_math::better(max, a, b); };
    // The first best, found the slow way.
    std::int64_t first = 0;
    for (std::int64_t i = 1; i < n; ++i)
      if (max ? x[std::size_t(i)] > x[std::size_t(first)] : x[std::size_t(i)] < x[std::size_t(first)]) first = i;
    auto [one, two] = one_and_two_pass(x, true, chunks, better);
    CHECK(one.index == first);
    CHECK(two.index == first);

    // A best value placed last in chunk 1 and first in chunk 2: the earlier wins.
    std::vector<double> y = x;
    const double best = max ? 1e9 : -1e9;
    y[std::size_t(chunks.end(1, n) - 1)] = best;
    y[std::size_t(chunks.begin(2))] = best;
    CHECK(one_and_two_pass(y, true, chunks, better).second.index == chunks.end(1, n) - 1);

    // Two NaN in different chunks: the first NaN, whatever the values.
    y[std::size_t(chunks.begin(2) + 5)] = std::numeric_limits<double>::quiet_NaN();
    y[std::size_t(chunks.begin(1) + 3)] = std::numeric_limits<double>::quiet_NaN();
    CHECK(one_and_two_pass(y, true, chunks, better).second.index == chunks.begin(1) + 3);
  }
}
