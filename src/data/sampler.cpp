// Epoch orders and batch plans. See Note [Reproducible shuffling] in sampler.hpp.
#include "data/sampler.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <utility>

namespace ndgc::data::detail {
namespace {

// Uniform in [0, range) (range > 0): reject the low draws that would bias the
// modulo. See Note [Reproducible shuffling].
std::uint64_t bounded(std::mt19937_64& engine, std::uint64_t range) noexcept {
  const std::uint64_t threshold = (0 - range) % range;  // 2^64 mod range
  std::uint64_t x;
  do x = engine();
  while (x < threshold);
  return x % range;
}

}  // namespace

std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::vector<std::int64_t> epoch_order(std::int64_t n, bool shuffle, std::uint64_t seed, std::int64_t epoch) {
  std::vector<std::int64_t> order(std::size_t(std::max<std::int64_t>(n, 0)));
  std::iota(order.begin(), order.end(), std::int64_t(0));
  if (!shuffle) return order;
  std::mt19937_64 engine(splitmix64(splitmix64(seed) ^ std::uint64_t(epoch)));
  for (std::size_t i = order.size(); i > 1; --i) {
    std::size_t j = std::size_t(bounded(engine, i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

std::int64_t batch_count(std::int64_t n, std::int64_t batch_size, bool drop_last, std::int64_t limit) noexcept {
  if (n <= 0 || batch_size <= 0) return 0;
  std::int64_t count = drop_last ? n / batch_size : (n + batch_size - 1) / batch_size;
  return limit > 0 ? std::min(count, limit) : count;
}

std::vector<std::vector<std::int64_t>> split_batches(const std::vector<std::int64_t>& order,
                                                     std::int64_t batch_size, std::int64_t count) {
  std::vector<std::vector<std::int64_t>> plan;
  plan.reserve(std::size_t(count));
  const auto n = std::int64_t(order.size());
  for (std::int64_t b = 0; b < count; ++b) {
    std::int64_t begin = b * batch_size, end = std::min(n, begin + batch_size);
    plan.emplace_back(order.begin() + begin, order.begin() + end);
  }
  return plan;
}

std::vector<std::vector<std::int64_t>> shard_batches(const std::vector<std::vector<std::int64_t>>& plan, int rank,
                                                     int ranks) {
  std::vector<std::vector<std::int64_t>> shards;
  shards.reserve(plan.size());
  for (const auto& batch : plan) {
    const auto n = std::int64_t(batch.size());
    const std::int64_t begin = rank * n / ranks, end = (rank + 1) * n / ranks;
    shards.emplace_back(batch.begin() + begin, batch.begin() + end);
  }
  return shards;
}

}  // namespace ndgc::data::detail
