// BatchRange: an epoch's batches as an input range, made on the consumer's
// thread or by a Prefetcher.
//
// The range owns the batch the iterator points at (`current`); advancing
// destroys it (closing its manager, unless the consumer moved the batch out)
// before the next one is fetched, so without prefetching at most one batch
// is alive. Each batch's manager is renamed "batch <index>" so that dumps
// and leak reports show which step a leftover came from. The first begin()
// starts the work: a range that is never iterated makes nothing.
//
// Thread-safety: a range and its iterators belong to one consumer thread;
// the worker only calls make() (see prefetcher.hpp). A failure to make a
// batch is rethrown from begin() or ++ and leaves the range exhausted.
#include <optional>

#include <fmt/format.h>

#include "data/prefetcher.hpp"
#include "ndgc/data.hpp"
#include "ndgc/error.hpp"

namespace ndgc::data {

struct BatchRange::State {
  std::shared_ptr<const Dataset> dataset;
  ManagerRef parent;
  std::vector<std::vector<std::int64_t>> plan;
  int prefetch = 0;
  bool started = false;
  bool done = false;
  std::size_t next = 0;  // without prefetching: the next plan position to make
  std::optional<Batch> current;
  // Last, so it is destroyed (its thread joined) before what its thread uses.
  std::unique_ptr<detail::Prefetcher> prefetcher;

  // Runs on the worker when prefetching: touches only immutable members.
  Batch make(std::int64_t index) const {
    Batch batch = dataset->get_batch(parent, plan[std::size_t(index)]);
    batch.index = index;
    if (batch.manager.defined()) batch.manager.set_name(fmt::format("batch {}", index));
    return batch;
  }

  void fetch() {
    current.reset();  // close the previous batch before making room for the next
    if (done) return;
    try {
      if (prefetcher) {
        if (std::optional<Batch> batch = prefetcher->next()) current.emplace(std::move(*batch));
        else done = true;
      } else if (next < plan.size()) {
        current.emplace(make(std::int64_t(next++)));
      } else {
        done = true;
      }
    } catch (...) {
      done = true;
      throw;
    }
  }
};

BatchRange::BatchRange(const ArrayDataset& dataset, ManagerRef parent, std::vector<std::vector<std::int64_t>> plan,
                       int prefetch)
    : BatchRange(std::make_shared<ArrayDataset>(dataset), std::move(parent), std::move(plan), prefetch) {}

BatchRange::BatchRange(std::shared_ptr<const Dataset> dataset, ManagerRef parent,
                       std::vector<std::vector<std::int64_t>> plan, int prefetch)
    : state_(std::make_unique<State>()) {
  if (!dataset) throw InvalidArgument("BatchRange: the dataset is null");
  if (!parent.defined())
    throw InvalidArgument("BatchRange: the parent ManagerRef is empty (default-constructed or moved-from)");
  if (prefetch < 0) throw InvalidArgument(fmt::format("BatchRange: prefetch depth {} is negative", prefetch));
  state_->dataset = std::move(dataset);
  state_->parent = std::move(parent);
  state_->plan = std::move(plan);
  state_->prefetch = prefetch;
}

BatchRange::~BatchRange() = default;
BatchRange::BatchRange(BatchRange&&) noexcept = default;

std::int64_t BatchRange::size() const noexcept { return state_ ? std::int64_t(state_->plan.size()) : 0; }

BatchRange::Iterator BatchRange::begin() {
  if (state_ && !state_->started) {
    state_->started = true;
    if (state_->prefetch > 0 && !state_->plan.empty()) {
      const State* s = state_.get();
      state_->prefetcher = std::make_unique<detail::Prefetcher>(
          std::int64_t(s->plan.size()), s->prefetch, [s](std::int64_t i) { return s->make(i); });
    }
    state_->fetch();
  }
  return Iterator(this);
}

Batch& BatchRange::Iterator::operator*() const {
  if (!range_->state_ || !range_->state_->current)
    throw InvalidArgument("BatchRange: dereferencing an iterator at the end of the range");
  return *range_->state_->current;
}

BatchRange::Iterator& BatchRange::Iterator::operator++() {
  if (range_->state_) range_->state_->fetch();
  return *this;
}

bool BatchRange::Iterator::operator==(std::default_sentinel_t) const {
  return !range_->state_ || !range_->state_->current;
}

}  // namespace ndgc::data
