// ArrayDataset: samples as rows of two arrays; settings, epoch plans, batches.
//
// A batch gathers its rows of the features and of the labels into two new
// arrays of a fresh sub-manager of the caller's manager (data/gather.hpp), so
// the batch owns everything it holds. The dataset itself is two handles and
// a few settings: copying it is cheap, which is how a BatchRange keeps its
// own copy (a temporary dataset in a range-for must not dangle).
//
// Thread-safety: const members may run on several threads at once (the
// prefetch thread calls get_batch); the setters must not race with them.
#include <fmt/format.h>

#include "data/gather.hpp"
#include "data/sampler.hpp"
#include "ndgc/data.hpp"
#include "ndgc/error.hpp"

namespace ndgc::data {

ArrayDataset::ArrayDataset(NDArray features, NDArray labels)
    : features_(std::move(features)), labels_(std::move(labels)) {
  if (!features_.defined() || !labels_.defined())
    throw InvalidArgument(fmt::format("ArrayDataset: the {} handle is empty", features_.defined() ? "labels" : "features"));
  Shape fs = features_.shape(), ls = labels_.shape();
  if (fs.rank() == 0 || ls.rank() == 0 || fs[0] != ls[0])
    throw InvalidArgument(fmt::format(
        "ArrayDataset: features {} and labels {} must both have the samples along axis 0, as many of each",
        fs.to_string(), ls.to_string()));
  rows_ = fs[0];
}

std::int64_t ArrayDataset::size() const { return rows_; }

Batch ArrayDataset::get_batch(const ManagerRef& parent, std::span<const std::int64_t> indices) const {
  Batch batch;
  batch.manager = ManagerRef(parent).new_sub_manager("batch");
  batch.data.push_back(detail::gather_rows(features_, indices, batch.manager, Site::current(), "get_batch"));
  batch.labels.push_back(detail::gather_rows(labels_, indices, batch.manager, Site::current(), "get_batch"));
  batch.size = std::int64_t(indices.size());
  return batch;
}

ArrayDataset& ArrayDataset::set_batch_size(std::int64_t batch_size) {
  if (batch_size <= 0) throw InvalidArgument(fmt::format("set_batch_size: {} is not positive", batch_size));
  batch_size_ = batch_size;
  return *this;
}

ArrayDataset& ArrayDataset::set_shuffle(bool shuffle, std::uint64_t seed) {
  shuffle_ = shuffle;
  seed_ = seed;
  return *this;
}

ArrayDataset& ArrayDataset::set_drop_last(bool drop_last) {
  drop_last_ = drop_last;
  return *this;
}

ArrayDataset& ArrayDataset::set_prefetch(int depth) {
  if (depth < 0) throw InvalidArgument(fmt::format("set_prefetch: depth {} is negative", depth));
  prefetch_ = depth;
  return *this;
}

ArrayDataset& ArrayDataset::set_limit_batches(std::int64_t limit) {
  if (limit < 0) throw InvalidArgument(fmt::format("set_limit_batches: {} is negative (0: no limit)", limit));
  limit_batches_ = limit;
  return *this;
}

ArrayDataset& ArrayDataset::set_shard(int rank, int ranks) {
  if (ranks <= 0 || rank < 0 || rank >= ranks)
    throw InvalidArgument(fmt::format("set_shard: rank {} of {} is not a shard (0 <= rank < ranks)", rank, ranks));
  shard_rank_ = rank;
  shard_count_ = ranks;
  return *this;
}

std::int64_t ArrayDataset::batch_count() const {
  const std::int64_t global = batch_size_ * shard_count_;
  std::int64_t count = detail::batch_count(rows_, global, drop_last_, limit_batches_);
  // See set_shard: a global batch too short to give every rank a row is dropped.
  if (count > 0 && shard_count_ > 1 && rows_ - (count - 1) * global < shard_count_) --count;
  return count;
}

std::vector<std::vector<std::int64_t>> ArrayDataset::epoch_plan(std::int64_t epoch) const {
  auto plan = detail::split_batches(detail::epoch_order(rows_, shuffle_, seed_, epoch), batch_size_ * shard_count_,
                                    batch_count());
  if (shard_count_ == 1) return plan;
  return detail::shard_batches(plan, shard_rank_, shard_count_);
}

BatchRange ArrayDataset::batches(const ManagerRef& parent, std::int64_t epoch) const {
  return BatchRange(*this, parent, epoch_plan(epoch), prefetch_);
}

}  // namespace ndgc::data
