// Batcher (batcher.hpp): gathering rows into batches and running them.
#include "serving/batcher.hpp"

#include <optional>

#include <fmt/format.h>

#include "ndgc/autograd.hpp"
#include "ndgc/ndarray.hpp"
#include "ndgc/workspace.hpp"

namespace ndgc::serving {

namespace {
double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Runs f when the scope ends, on an exception too.
template <class F>
struct AtExit {
  F f;
  ~AtExit() { f(); }
};
template <class F>
AtExit(F) -> AtExit<F>;
}  // namespace

Batcher::Batcher(std::string model_name, Model& model, TensorSpec spec, BatchOptions options, ModelMetrics& metrics)
    : name_(std::move(model_name)), model_(model), spec_(std::move(spec)), options_(options), metrics_(metrics) {
  options_.workers = std::max(1, options_.workers);
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this, i] { work(i); });
}

Batcher::~Batcher() {
  close();
  for (std::thread& t : workers_) t.join();
}

bool Batcher::submit(Job&& job) {
  bool now = false;
  {
    std::lock_guard lock(mutex_);
    if (closed_ || queue_.size() >= options_.max_queue) return false;
    metrics_.pending.fetch_add(1);
    now = options_.max_queue_delay.count() == 0 && queue_.empty() && running_ < options_.workers;
    if (now) ++running_;  // Note [Inline batches]
    else queue_.push_back(std::move(job));
  }
  if (!now) {
    ready_.notify_one();
    return true;
  }
  AtExit release{[this] { finished(); }};
  std::vector<Job> batch;
  batch.push_back(std::move(job));
  run(batch, batch.front().request.rows, -1);
  return true;
}

void Batcher::finished() {
  bool waiting;
  {
    std::lock_guard lock(mutex_);
    --running_;
    waiting = !queue_.empty();
  }
  if (waiting) ready_.notify_one();
}

void Batcher::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  ready_.notify_all();
}

std::size_t Batcher::abandon(const std::string& reason) {
  std::deque<Job> left;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    left.swap(queue_);
  }
  ready_.notify_all();
  for (Job& job : left) {
    metrics_.pending.fetch_sub(1);
    job.done(503, EncodedResponse{error_body(reason), 0});
  }
  return left.size();
}

void Batcher::work(int index) {
  std::vector<Job> batch;
  for (;;) {
    std::int64_t rows = 0;
    bool more = false;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return (!queue_.empty() && running_ < options_.workers) || (closed_ && queue_.empty()); });
      if (queue_.empty()) return;  // closed and drained
      ++running_;
      const auto deadline = std::chrono::steady_clock::now() + options_.max_queue_delay;
      for (;;) {
        while (!queue_.empty() && (batch.empty() || rows + queue_.front().request.rows <= options_.max_batch_size)) {
          rows += queue_.front().request.rows;
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
        if (rows >= options_.max_batch_size || !queue_.empty() || closed_ || options_.max_queue_delay.count() == 0)
          break;
        if (ready_.wait_until(lock, deadline) == std::cv_status::timeout) {
          while (!queue_.empty() && rows + queue_.front().request.rows <= options_.max_batch_size) {
            rows += queue_.front().request.rows;
            batch.push_back(std::move(queue_.front()));
            queue_.pop_front();
          }
          break;
        }
      }
      more = !queue_.empty();
    }
    if (more) ready_.notify_one();  // what did not fit goes to another worker
    AtExit release{[this] { finished(); }};
    run(batch, rows, index);
    batch.clear();
  }
}

void Batcher::run(std::vector<Job>& batch, std::int64_t rows, int index) {
  const auto start = std::chrono::steady_clock::now();
  for (const Job& job : batch) metrics_.queue_seconds.observe(seconds(start - job.arrived));
  std::vector<std::pair<unsigned, EncodedResponse>> answers;
  answers.reserve(batch.size());
  autograd::NoGradient pause;
  {
    NDManager context = model_.manager().new_sub_manager("batch");  // Note [A batch's memory]
    try {
      std::optional<workspace::Scope> ws;
      if (options_.workspace) {
        workspace::Config config;
        ws.emplace(workspace::activate(config, index < 0 ? fmt::format("serve-{}-inline", name_)
                                                        : fmt::format("serve-{}-worker{}", name_, index)));
      }
      std::vector<float> input;
      input.reserve(std::size_t(rows * spec_.inputs));
      for (const Job& job : batch) {
        input.insert(input.end(), job.request.data.begin(), job.request.data.end());
        if (options_.leak_translator)  // the demo leak: see Note [A batch's memory]
          (void)model_.manager().create(job.request.data, Shape{job.request.rows, spec_.inputs});
      }
      NDArray x = context.create(input, Shape{rows, spec_.inputs});
      const std::vector<float> y = model_.block().forward(NDList{x}, /*training=*/false).head().to_vector<float>();
      std::int64_t row = 0;
      for (const Job& job : batch) {
        answers.emplace_back(200, encode_infer_response(name_, job.request, spec_, y.data() + row * spec_.outputs));
        row += job.request.rows;
      }
    } catch (const std::exception& e) {
      answers.assign(batch.size(), {500u, EncodedResponse{error_body(fmt::format("inference failed: {}", e.what())), 0}});
    }
  }  // the context closes before any answer leaves: a client that has its answer sees the batch's memory gone
  {
    const auto end = std::chrono::steady_clock::now();
    metrics_.compute_seconds.observe(seconds(end - start));
    metrics_.batch_size.observe(double(rows));
    metrics_.executions.fetch_add(1);
    metrics_.inferences.fetch_add(std::uint64_t(rows));
    for (std::size_t i = 0; i < batch.size(); ++i) {
      metrics_.total_seconds.observe(seconds(end - batch[i].arrived));
      metrics_.pending.fetch_sub(1);  // first: a client that has its answer sees itself no longer pending
      batch[i].done(answers[i].first, std::move(answers[i].second));
    }
  }
}

}  // namespace ndgc::serving
