// Batcher (batcher.hpp): gathering rows into batches and running them.
#include "serving/batcher.hpp"

#include <optional>

#include <fmt/format.h>

#include "ndgc/autocast.hpp"
#include "ndgc/autograd.hpp"
#include "ndgc/error.hpp"
#include "ndgc/ndlist.hpp"
#include "ndgc/ndarray.hpp"
#include "ndgc/workspace.hpp"
#include "support/scope_exit.hpp"

namespace ndgc::serving {

namespace {
double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
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
  support::ScopeExit release{[this] { finished(); }};
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

// Moves queued jobs into `batch` while their rows fit beside `rows` (the first
// job always goes, however many rows it has); returns the rows now in batch.
std::int64_t Batcher::take_fitting(std::vector<Job>& batch, std::int64_t rows) {
  while (!queue_.empty() && (batch.empty() || rows + queue_.front().request.rows <= options_.max_batch_size)) {
    rows += queue_.front().request.rows;
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return rows;
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
        rows = take_fitting(batch, rows);
        if (rows >= options_.max_batch_size || !queue_.empty() || closed_ || options_.max_queue_delay.count() == 0)
          break;
        if (ready_.wait_until(lock, deadline) == std::cv_status::timeout) {
          rows = take_fitting(batch, rows);
          break;
        }
      }
      more = !queue_.empty();
    }
    if (more) ready_.notify_one();  // what did not fit goes to another worker
    support::ScopeExit release{[this] { finished(); }};
    run(batch, rows, index);
    batch.clear();
  }
}

namespace {

// `rows` rows of `t` from their raw bytes, as an array in `manager`.
NDArray tensor_of(const ManagerRef& manager, const TensorInfo& t, const std::string& bytes, std::int64_t rows) {
  Shape shape{rows};
  for (std::int64_t d : t.row_shape) shape.push_back(d);
  return manager.create_raw(bytes.data(), t.dtype, std::size_t(rows * row_elements(t)), shape);
}

}  // namespace

// The forward pass's outputs as raw bytes, checked against the spec: a model
// that gives other dtypes or shapes than it declared is an inference error.
std::vector<std::string> Batcher::outputs_of(const NDList& ys, std::int64_t rows) const {
  if (ys.size() != spec_.outputs.size())
    throw InvalidArgument(fmt::format("the model gave {} outputs, it declares {}", ys.size(), spec_.outputs.size()));
  std::vector<std::string> out(ys.size());
  for (std::size_t k = 0; k < ys.size(); ++k) {
    const TensorInfo& t = spec_.outputs[k];
    Shape want{rows};
    for (std::int64_t d : t.row_shape) want.push_back(d);
    // In 16 bits (ServerOptions::precision) a floating output is converted to the declared dtype.
    const bool converts = is_half(ys[k].dtype()) && is_floating(t.dtype);
    if ((ys[k].dtype() != t.dtype && !converts) || !(ys[k].shape() == want))
      throw InvalidArgument(fmt::format("output '{}' is {} {}, the model declares {} {}", t.name,
                                        to_string(ys[k].dtype()), ys[k].shape().to_string(), to_string(t.dtype),
                                        want.to_string()));
    out[k].resize(std::size_t(ys[k].size()) * size_of(t.dtype));
    ys[k].copy_to(out[k].data(), t.dtype, std::size_t(ys[k].size()));
  }
  return out;
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
      if (options_.leak_translator)  // the demo leak: see Note [A batch's memory]
        for (const Job& job : batch) (void)tensor_of(model_.manager(), spec_.inputs[0], job.request.data[0], job.request.rows);
      NDList xs;
      for (std::size_t k = 0; k < spec_.inputs.size(); ++k) {
        std::string rows_of_all;
        for (const Job& job : batch) rows_of_all += job.request.data[k];
        xs.push_back(tensor_of(context, spec_.inputs[k], rows_of_all, rows));
      }
      NDList predictions;
      {
        Autocast region(options_.precision);  // float32: none
        predictions = model_.block().forward(xs, /*training=*/false);
      }
      const std::vector<std::string> ys = outputs_of(predictions, rows);
      std::int64_t row = 0;
      std::vector<const char*> at(spec_.outputs.size());
      for (const Job& job : batch) {
        for (std::size_t k = 0; k < at.size(); ++k)
          at[k] = ys[k].data() + row * row_elements(spec_.outputs[k]) * std::int64_t(size_of(spec_.outputs[k].dtype));
        answers.emplace_back(200, encode_infer_response(name_, job.request, spec_, at));
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
