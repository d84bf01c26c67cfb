// Prefetcher: the bounded queue and its worker. See prefetcher.hpp and
// Note [Stopping the prefetch thread].
#include "data/prefetcher.hpp"

#include <utility>

namespace ndgc::data::detail {

Prefetcher::Prefetcher(std::int64_t count, int depth, Make make)
    : count_(count), depth_(std::size_t(depth > 0 ? depth : 1)), make_(std::move(make)), worker_([this] { run(); }) {}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  consumed_.notify_all();
  if (worker_.joinable()) worker_.join();
  ready_.clear();  // See Note [Stopping the prefetch thread]
}

void Prefetcher::run() noexcept {
  std::exception_ptr error;
  try {
    produce();
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard lock(mu_);
    // Moved, not copied: the worker keeps no reference, so the consumer drops
    // the last one and destroys the exception on its own thread. (A copy left
    // here made the worker destroy it after the consumer had caught it,
    // ordered only by libstdc++'s uninstrumented refcount: ThreadSanitizer
    // reported a race on the exception's vptr.)
    error_ = std::move(error);
    finished_ = true;
  }
  produced_.notify_one();
}

void Prefetcher::produce() {
  for (std::int64_t i = 0; i < count_; ++i) {
    {
      std::unique_lock lock(mu_);
      producer_waiting_ = true;
      consumed_.wait(lock, [&] { return stop_ || ready_.size() < depth_; });
      producer_waiting_ = false;
      if (stop_) return;
    }
    Batch batch = make_(i);
    std::unique_lock lock(mu_);  // released before `batch` is destroyed
    if (stop_) return;           // `batch` closes here, on the worker
    ready_.push_back(std::move(batch));
    const bool wake = consumer_waiting_;
    lock.unlock();
    if (wake) produced_.notify_one();  // See Note [Waking only sleepers]
  }
}

std::optional<Batch> Prefetcher::next() {
  std::unique_lock lock(mu_);
  consumer_waiting_ = true;
  produced_.wait(lock, [&] { return !ready_.empty() || finished_; });
  consumer_waiting_ = false;
  if (!ready_.empty()) {
    Batch batch = std::move(ready_.front());
    ready_.pop_front();
    const bool wake = producer_waiting_;
    lock.unlock();
    if (wake) consumed_.notify_one();
    return batch;
  }
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  return std::nullopt;
}

}  // namespace ndgc::data::detail
