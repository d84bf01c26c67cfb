// Epoch orders: reproducible, a permutation, different per epoch; batch plans.
#include <algorithm>
#include <numeric>
#include <set>

#include <doctest/doctest.h>

#include "data/sampler.hpp"

using namespace ndgc::data::detail;

TEST_CASE("epoch_order: unshuffled is the identity") {
  std::vector<std::int64_t> order = epoch_order(7, false, 42, 3);
  CHECK(order == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6});
  CHECK(epoch_order(0, true, 1, 0).empty());
  CHECK(epoch_order(1, true, 1, 0) == std::vector<std::int64_t>{0});
}

TEST_CASE("epoch_order: a permutation, the same for the same (seed, epoch), different otherwise") {
  const std::int64_t n = 1000;
  std::vector<std::int64_t> a = epoch_order(n, true, 42, 0);
  std::vector<std::int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::int64_t> identity(n);
  std::iota(identity.begin(), identity.end(), 0);
  CHECK(sorted == identity);
  CHECK(a != identity);
  CHECK(epoch_order(n, true, 42, 0) == a);
  std::set<std::vector<std::int64_t>> seen{a};
  for (std::int64_t epoch = 1; epoch < 20; ++epoch) seen.insert(epoch_order(n, true, 42, epoch));
  CHECK(seen.size() == 20);
  CHECK(epoch_order(n, true, 43, 0) != a);
}

TEST_CASE("epoch_order: pinned, so that a change of algorithm cannot pass unnoticed") {
  // See Note [Reproducible shuffling]: these are the orders on every platform (checked against an
  // independent Python implementation of mt19937_64 and the algorithm the note describes).
  CHECK(epoch_order(10, true, 42, 0) == std::vector<std::int64_t>{2, 0, 4, 7, 8, 3, 5, 1, 9, 6});
  CHECK(epoch_order(10, true, 42, 1) == std::vector<std::int64_t>{2, 8, 7, 3, 6, 4, 0, 9, 5, 1});
  CHECK(splitmix64(0) == 0xE220A8397B1DCDAFull);  // the reference value of splitmix64's first output
}

TEST_CASE("epoch_order: positions are close to uniform (no modulo or shuffle bias)") {
  // Where element 0 lands over many epochs: each of 8 positions about 1/8 of the time.
  const int trials = 8000;
  std::vector<int> where(8, 0);
  for (int e = 0; e < trials; ++e) {
    std::vector<std::int64_t> order = epoch_order(8, true, 7, e);
    where[std::size_t(std::find(order.begin(), order.end(), 0) - order.begin())]++;
  }
  for (int count : where) CHECK(std::abs(count - trials / 8) < 150);  // ~5 standard deviations
}

TEST_CASE("batch_count and split_batches") {
  CHECK(batch_count(10, 3, false, 0) == 4);
  CHECK(batch_count(10, 3, true, 0) == 3);
  CHECK(batch_count(9, 3, false, 0) == 3);
  CHECK(batch_count(9, 3, true, 0) == 3);
  CHECK(batch_count(10, 3, false, 2) == 2);
  CHECK(batch_count(10, 3, false, 100) == 4);
  CHECK(batch_count(2, 3, true, 0) == 0);
  CHECK(batch_count(2, 3, false, 0) == 1);
  CHECK(batch_count(0, 3, false, 0) == 0);
  std::vector<std::vector<std::int64_t>> plan = split_batches(epoch_order(10, false, 0, 0), 3, 4);
  REQUIRE(plan.size() == 4);
  CHECK(plan[0] == std::vector<std::int64_t>{0, 1, 2});
  CHECK(plan[3] == std::vector<std::int64_t>{9});
}

TEST_CASE("shard_batches: consecutive, near-equal parts that are disjoint and cover each batch") {
  const std::vector<std::vector<std::int64_t>> plan{{0, 1, 2, 3, 4, 5, 6}, {7, 8, 9}, {10}};
  for (int ranks : {1, 2, 3}) {
    CAPTURE(ranks);
    std::vector<std::vector<std::vector<std::int64_t>>> shards;
    for (int r = 0; r < ranks; ++r) shards.push_back(shard_batches(plan, r, ranks));
    for (std::size_t b = 0; b < plan.size(); ++b) {
      std::vector<std::int64_t> joined;
      for (int r = 0; r < ranks; ++r) {
        const auto& part = shards[std::size_t(r)][b];
        CHECK(std::int64_t(part.size()) >= std::int64_t(plan[b].size()) / ranks);
        CHECK(std::int64_t(part.size()) <= std::int64_t(plan[b].size()) / ranks + 1);
        joined.insert(joined.end(), part.begin(), part.end());
      }
      CHECK(joined == plan[b]);  // in order: disjoint and covering
    }
  }
  CHECK(shard_batches(plan, 1, 2)[0] == std::vector<std::int64_t>{3, 4, 5, 6});
}
