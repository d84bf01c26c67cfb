// Prefetcher: one background thread making a range's batches ahead of its consumer.
//
// A bounded queue (a mutex, two condition variables, a deque of at most
// `depth` batches): the worker makes batch i while the consumer uses batch
// i-1, and waits when `depth` batches are ready and unclaimed. Batches come
// out in plan order. A failure to make batch i ends the worker; the consumer
// gets batches 0..i-1, then the exception (rethrown on its thread).
//
// Note [Stopping the prefetch thread]
// The destructor sets `stop`, wakes the worker and joins it. The worker
// checks `stop` before each batch and again before queueing it; a batch made
// after the stop is dropped on the worker (its manager closes there), and
// those left in the queue close in the destructor, on the consumer's thread,
// after the join: nothing outlives the range, and no batch closes while our
// mutex is held. Handles and managers may be used and closed from any thread.
//
// Note [Waking only sleepers]
// A notify is a futex system call even when nobody waits; per batch that
// was a third of the prefetching overhead. Each side records, under the
// mutex, that it is about to wait, and the other side notifies only then.
// The flag is set and the predicate checked under the same lock the other
// side holds while it changes the state, so no wake-up can be lost. The
// final "finished" and the destructor's "stop" always notify.
//
// Thread-safety: one consumer thread calls next(); the worker is internal.
// Key numbers: memory in flight is at most depth + 2 batches (the queue, the
// one being made and the consumer's).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "ndgc/data.hpp"

namespace ndgc::data::detail {

class Prefetcher {
 public:
  using Make = std::function<Batch(std::int64_t index)>;
  // Starts the worker, which calls make(0), make(1), ... make(count - 1).
  Prefetcher(std::int64_t count, int depth, Make make);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // The next batch, waiting for it if needed; nullopt after the last one.
  // Rethrows the worker's exception at the batch that failed.
  std::optional<Batch> next();

 private:
  void run() noexcept;  // produce(), then records how it ended
  void produce();

  const std::int64_t count_;
  const std::size_t depth_;
  const Make make_;
  std::mutex mu_;
  std::condition_variable produced_;  // the worker queued a batch or finished
  std::condition_variable consumed_;  // room in the queue, or stop
  std::deque<Batch> ready_;           // guarded by mu_
  std::exception_ptr error_;          // guarded by mu_
  bool stop_ = false;                 // guarded by mu_
  bool finished_ = false;             // guarded by mu_
  bool consumer_waiting_ = false;     // guarded by mu_: in next()'s wait
  bool producer_waiting_ = false;     // guarded by mu_: waiting for room
  std::thread worker_;                // last: starts once the rest exists
};

}  // namespace ndgc::data::detail
