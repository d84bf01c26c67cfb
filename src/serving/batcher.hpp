// The bounded queue, the dynamic batcher and the inference workers of one
// model. I/O threads submit decoded requests; `workers` threads each take
// the oldest request and as many more as fit in max_batch_size rows, waiting
// at most max_queue_delay for more (0: take what is queued now), run one
// forward pass and hand each request its own rows.
//
// Note [A batch's memory]
// Each batch runs in a context manager, a sub-manager of the model's,
// created by the worker and closed when every response of the batch has
// been handed to its connection (the bytes are copied into the response
// text first). With `workspace`, each worker also opens its own workspace
// around the batch, so the activations of every batch reuse one arena. No
// array outlives its batch, which is why the live arrays and bytes in use
// after N requests equal those after warm-up, exactly. The exception is the
// demo leak (`leak_translator`, DJL 2766): its pre-processing creates one
// array per request in the model's manager, which grows with auto-close off
// and is reclaimed with it on (the handle dies at the end of the batch).
//
// Note [Inline batches]
// With max_queue_delay 0 nothing waits for company, so a request that finds
// the queue empty and fewer than `workers` batches running is run at once,
// as a batch of one, on the thread that submits it (an I/O thread), in place
// of a hand-off to a worker and of the worker's hand-off of the reply back:
// two thread wake-ups per request fewer, each tens of µs on a virtual
// machine (perf/RESULTS.md, "ndgc-serve under load"). It counts as one of the
// `workers` running batches, so the limit on concurrent batches holds, and
// requests that arrive meanwhile queue for the workers as before.
//
// Thread-safety: submit() from any thread; the queue is a mutex and a
// condition variable (a batch is hundreds of µs; the lock is held for
// pointer moves only).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ndgc/model.hpp"
#include "serving/kserve_codec.hpp"
#include "serving/metrics.hpp"

namespace ndgc::serving {

struct BatchOptions {
  std::int64_t max_batch_size = 32;  // rows
  std::chrono::microseconds max_queue_delay{0};
  std::size_t max_queue = 1000;  // requests waiting, not counting those being computed
  int workers = 1;
  bool workspace = false;
  bool leak_translator = false;
  DataType precision = DataType::float32;  // ServerOptions::precision
};

struct Job {
  InferRequest request;
  std::chrono::steady_clock::time_point arrived;
  // Called once on a worker with the response status and body (an error's
  // body is JSON: json_length 0).
  std::function<void(unsigned status, EncodedResponse response)> done;
};

class Batcher {
 public:
  Batcher(std::string model_name, Model& model, TensorSpec spec, BatchOptions options, ModelMetrics& metrics);
  ~Batcher();  // close(), then joins the workers once the queue is empty
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // False when the queue is full or closed (the caller answers 503).
  bool submit(Job&& job);
  // No more submits; the workers finish what is queued, then exit.
  void close();
  // No more submits, and what is queued is answered 503 with `reason`
  // instead of computed (a shutdown past its deadline): the workers finish
  // the batches they are running, then exit. Returns how many were answered.
  std::size_t abandon(const std::string& reason);
  // Requests queued or being computed.
  std::int64_t pending() const noexcept { return metrics_.pending.load(); }

 private:
  void work(int index);
  std::int64_t take_fitting(std::vector<Job>& batch, std::int64_t rows);  // with mutex_ held
  // Runs a batch; index: the worker's, or -1 on a submitting thread (Note [Inline batches]).
  void run(std::vector<Job>& batch, std::int64_t rows, int index);
  std::vector<std::string> outputs_of(const NDList& ys, std::int64_t rows) const;
  // A batch is done: one more may start.
  void finished();

  std::string name_;
  Model& model_;
  TensorSpec spec_;
  BatchOptions options_;
  ModelMetrics& metrics_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> queue_;
  int running_ = 0;  // batches being computed, at most options_.workers
  bool closed_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ndgc::serving
