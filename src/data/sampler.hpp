// The order of samples in an epoch, and its split into batches.
//
// Note [Reproducible shuffling]
// std::shuffle and std::uniform_int_distribution are implementation-defined
// algorithms: the same seed gives different orders with libstdc++ and libc++.
// So the order is spelled out here: std::mt19937_64 (fully specified by the
// standard) seeded with splitmix64(splitmix64(seed) ^ epoch), drawing each
// swap index by rejection sampling (unbiased, no implementation freedom),
// in a Fisher–Yates pass from the last position down. The same (seed, epoch)
// gives the same order on every platform; tests pin one order.
//
// Thread-safety: pure functions. Cost: one engine draw per sample (~2 ms for 60000).
#pragma once

#include <cstdint>
#include <vector>

namespace ndgc::data::detail {

std::uint64_t splitmix64(std::uint64_t x) noexcept;

// 0..n-1, shuffled as in Note [Reproducible shuffling] when `shuffle`.
std::vector<std::int64_t> epoch_order(std::int64_t n, bool shuffle, std::uint64_t seed, std::int64_t epoch);

// Batches per epoch: ceil(n / batch_size), or floor with drop_last, at most `limit` (0: no limit).
std::int64_t batch_count(std::int64_t n, std::int64_t batch_size, bool drop_last, std::int64_t limit) noexcept;

// `order` cut into `count` batches of `batch_size` (the last one may be short).
std::vector<std::vector<std::int64_t>> split_batches(const std::vector<std::int64_t>& order,
                                                     std::int64_t batch_size, std::int64_t count);

// Rank `rank`'s part of each batch of `plan`: of a batch of n rows, rows
// [rank·n/ranks, (rank+1)·n/ranks) (consecutive, sizes differing by at most
// one). The ranks' parts are disjoint and cover every batch.
std::vector<std::vector<std::int64_t>> shard_batches(const std::vector<std::vector<std::int64_t>>& plan, int rank,
                                                     int ranks);

}  // namespace ndgc::data::detail
