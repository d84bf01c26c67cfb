// Training: Trainer, fit(), listeners and metrics (DJL's EasyTrain and friends).
//
//   Model model("mlp", std::make_unique<nn::Mlp>(784, 10, std::vector<std::int64_t>{128, 64}));
//   model.initialize(Shape{32, 784});
//   training::TrainingConfig config;
//   config.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
//   config.optimizer = std::make_shared<nn::Adam>(1e-3);
//   config.metrics.push_back(std::make_shared<training::Accuracy>());
//   config.listeners.push_back(std::make_shared<training::MemoryListener>("memory.csv"));
//   training::Trainer trainer(model, config);            // manager: model → trainer
//   training::fit(trainer, 3, train_set, &test_set);      // batches: trainer → batch
//   double acc = trainer.history().back().at("validate_accuracy");
//
// Managers follow DJL's tree (docs/design.md §4): the trainer's manager is a
// sub-manager of the model's; fit() asks the dataset for each batch in a
// sub-manager of the trainer's, and the batch's manager closes when the step
// is over. A step written like train_batch() — forward from the batch data,
// the loss from the predictions — keeps every per-step array in the batch
// manager: parameters, their gradients and the optimizer state are made once,
// in the model's manager, and only updated in place after that. So host bytes
// in use stay flat from epoch to epoch, with auto-close off or on; the
// MemoryListener shows it.
//
// Gradients: new_gradient_collector() zeroes the gradients of the model's
// parameters (those arrays only: no scan over a manager) and starts a
// GradientCollector, as DJL's trainer does.
//
// Workspaces (DL4J's WorkspaceMode): with config.workspace_mode ==
// WorkspaceMode::enabled, train_batch and validate_batch run inside a cyclic
// workspace of the calling thread (ndgc/workspace.hpp; its size learned from
// the first step): forward, loss, backward and update temporaries take no
// allocator call once it is learned. Parameters, gradients and optimizer
// state were made before, outside it. Each step's arrays (predictions, the
// loss) stay valid until the next step begins; copy one out with
// workspace::detach to keep it longer.
//
// Devices (DJL's trainer devices): a model made on Device::gpu(i) trains
// there. Parameters, gradients, the optimizer's state, the trainer's and
// batches' managers and the metrics' running totals are on that device;
// fit()'s batches are made on it (host data is gathered on the host and
// copied over, see ndgc/data.hpp), and train_batch() / validate_batch()
// copy a batch that is elsewhere (a custom Dataset, a batch made by hand)
// to it first. A step reads nothing back to the host: its loss is a
// LossValue, read only when someone asks (Note [Deferred loss] in
// src/training/trainer.cpp), and Accuracy and LossMetric add up on the
// device, read once when value() is asked (at the end of each epoch). So
// the only device→host copies in a GPU step are those a listener makes.
//
// Thread-safety: a Trainer is used by one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <optional>
#include <string_view>
#include <vector>

#include "ndgc/autograd.hpp"
#include "ndgc/data.hpp"
#include "ndgc/loss.hpp"
#include "ndgc/model.hpp"
#include "ndgc/optimizer.hpp"
#include "ndgc/workspace.hpp"

namespace ndgc::training {

class Trainer;

// ---- a step's loss -------------------------------------------------------------

// A batch's loss as the trainer computed it: a 0-d array on the model's
// device, and its value, read from there the first time it is asked for (a
// host synchronisation on a GPU) and remembered. Converts to double, so
// `double loss = trainer.train_batch(batch);` reads it as before, while a
// loop that ignores the result (fit()) reads nothing. The array lives in the
// batch's manager (in the step's workspace with WorkspaceMode::enabled): read
// the value before the batch closes (or the next step begins), or value()
// throws ArrayClosed. Not thread-safe: one thread reads a given object.
class LossValue {
 public:
  LossValue() = default;
  LossValue(double value) noexcept : value_(value), read_(true) {}  // a value already on the host
  explicit LossValue(NDArray loss) noexcept : array_(std::move(loss)) {}

  double value() const;
  operator double() const { return value(); }
  // Whether value() will read nothing (read already, or made from a double).
  bool is_read() const noexcept { return read_; }
  // The loss array (empty when made from a double).
  const NDArray& array() const noexcept { return array_; }

 private:
  NDArray array_;
  mutable double value_ = 0;
  mutable bool read_ = false;
};

// ---- metrics -------------------------------------------------------------------

class Metric {
 public:
  explicit Metric(std::string name) : name_(std::move(name)) {}
  virtual ~Metric() = default;
  const std::string& name() const noexcept { return name_; }
  virtual void reset() = 0;
  // One batch: its labels, the predictions and the batch's loss value.
  virtual void update(const NDList& labels, const NDList& predictions, double loss) = 0;
  // One batch as the Trainer reports it, the loss not yet read. The default
  // reads it (a host synchronisation when it is on a GPU) and calls
  // update(). A metric that can keep its running totals on the batch's
  // device overrides it: Accuracy and LossMetric do, on a GPU, in manager().
  virtual void accumulate(const NDList& labels, const NDList& predictions, const LossValue& loss) {
    update(labels, predictions, loss.value());
  }
  // The value over the batches since reset() (NaN before any).
  virtual double value() const = 0;
  // A fresh metric of the same kind (the trainer keeps one for training and
  // one for validation).
  virtual std::unique_ptr<Metric> clone() const = 0;
  // Data-parallel training: the running totals value() is computed from, so
  // the trainer can sum them over ranks at the end of each epoch and every
  // rank reports the metric of the whole epoch. Empty (the default): the
  // metric stays per rank.
  virtual std::vector<double> totals() const { return {}; }
  virtual void set_totals(const std::vector<double>& /*totals*/) {}

  // Where the metric may keep arrays from batch to batch (its running
  // totals on a GPU). The Trainer gives its own manager, on the model's
  // device. Unset (a metric used alone): totals stay on the host.
  void set_manager(ManagerRef manager) noexcept { manager_ = std::move(manager); }
  const ManagerRef& manager() const noexcept { return manager_; }

 private:
  std::string name_;
  ManagerRef manager_;
};

// Share of rows whose arg-max prediction (last axis) equals the label (class
// indices, as SoftmaxCrossEntropyLoss takes them).
// On a GPU (with a manager() there), accumulate() adds each batch's count of
// correct rows into a 0-d int64 array on the device; value() and totals()
// read it (one device→host copy each).
class Accuracy : public Metric {
 public:
  explicit Accuracy(std::string name = "accuracy") : Metric(std::move(name)) {}
  void reset() override;
  void update(const NDList& labels, const NDList& predictions, double loss) override;
  void accumulate(const NDList& labels, const NDList& predictions, const LossValue& loss) override;
  double value() const override;
  std::unique_ptr<Metric> clone() const override { return std::make_unique<Accuracy>(name()); }
  std::vector<double> totals() const override;
  void set_totals(const std::vector<double>& t) override;

 private:
  std::int64_t correct_ = 0, total_ = 0;  // on the host
  NDArray device_correct_;                // on the device: added to correct_ when read
};

// The mean loss, weighted by batch size. On a GPU (with a manager() there),
// accumulate() adds loss × rows into a 0-d float64 array on the device
// instead of reading each batch's loss; value() and totals() read it.
class LossMetric : public Metric {
 public:
  explicit LossMetric(std::string name = "loss") : Metric(std::move(name)) {}
  void reset() override;
  void update(const NDList& labels, const NDList& predictions, double loss) override;
  void accumulate(const NDList& labels, const NDList& predictions, const LossValue& loss) override;
  double value() const override;
  std::unique_ptr<Metric> clone() const override { return std::make_unique<LossMetric>(name()); }
  std::vector<double> totals() const override;
  void set_totals(const std::vector<double>& t) override;

 private:
  double sum_ = 0;  // on the host
  std::int64_t rows_ = 0;
  NDArray device_sum_;  // on the device: added to sum_ when read
};

// ---- listeners ------------------------------------------------------------------

struct BatchResult {
  std::int64_t epoch = 0;
  std::int64_t index = 0;  // in its epoch
  std::int64_t size = 0;   // rows
  LossValue loss;          // read on demand: a listener that never reads it costs no host copy
  bool training = true;    // false: a validation batch
};

// Hooks called by fit() (and by custom loops through Trainer::notify_*).
class TrainingListener {
 public:
  virtual ~TrainingListener() = default;
  virtual void on_training_begin(Trainer&) {}
  virtual void on_epoch_begin(Trainer&, std::int64_t /*epoch*/) {}
  virtual void on_batch_end(Trainer&, const BatchResult&) {}
  virtual void on_epoch_end(Trainer&, std::int64_t /*epoch*/) {}
  virtual void on_training_end(Trainer&) {}
};

// Wall time of each epoch (training and validation), in seconds.
class EpochTimingListener : public TrainingListener {
 public:
  void on_epoch_begin(Trainer&, std::int64_t epoch) override;
  void on_epoch_end(Trainer&, std::int64_t epoch) override;
  const std::vector<double>& epoch_seconds() const noexcept { return seconds_; }

 private:
  std::chrono::steady_clock::time_point start_;
  std::vector<double> seconds_;
};

// Memory per epoch: host bytes in use at the end of the epoch and their peak
// during it (memory::stats; the peak is reset when each epoch begins, for the
// whole process), the arrays open in the model's manager and below the
// trainer's, auto-close's reclaimed count and bytes so far (gc::stats), and
// for a model on a GPU that GPU's bytes in use, reserved by its caching
// allocator, and their peak during the epoch (0 for a model on the CPU).
// Rows are kept, and appended to a CSV file when one is given:
//   epoch,seconds,host_bytes,host_peak_bytes,model_arrays,trainer_arrays,reclaimed,reclaimed_bytes,
//   gpu_bytes,gpu_reserved_bytes,gpu_peak_bytes
class MemoryListener : public TrainingListener {
 public:
  struct Row {
    std::int64_t epoch = 0;
    double seconds = 0;
    std::uint64_t host_bytes = 0, host_peak_bytes = 0;
    std::size_t model_arrays = 0, trainer_arrays = 0;
    std::uint64_t reclaimed = 0, reclaimed_bytes = 0;
    std::uint64_t gpu_bytes = 0, gpu_reserved_bytes = 0, gpu_peak_bytes = 0;
  };
  // `csv` empty: rows in memory only. The file is created (truncated) when training begins.
  explicit MemoryListener(std::filesystem::path csv = {}) : path_(std::move(csv)) {}
  void on_training_begin(Trainer&) override;
  void on_epoch_begin(Trainer&, std::int64_t epoch) override;
  void on_epoch_end(Trainer&, std::int64_t epoch) override;
  const std::vector<Row>& rows() const noexcept { return rows_; }
  static const char* csv_header() noexcept;

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  std::chrono::steady_clock::time_point start_;
  std::vector<Row> rows_;
};

// Memory every N training steps: where MemoryListener gives one row an
// epoch, this shows a leak growing step by step, and on a GPU what the
// caching allocator reserves beside what arrays use. Reads the allocators'
// counters only (no device synchronisation). Rows are kept, and appended to
// a CSV file when one is given:
//   epoch,step,host_bytes,gpu_bytes,gpu_reserved_bytes
// `step` counts training steps from the start of training (1-based); the
// GPU columns are the model's device (0 for a model on the CPU).
// InvalidArgument for every_steps < 1.
class MemoryTimelineListener : public TrainingListener {
 public:
  struct Row {
    std::int64_t epoch = 0, step = 0;
    std::uint64_t host_bytes = 0, gpu_bytes = 0, gpu_reserved_bytes = 0;
  };
  explicit MemoryTimelineListener(std::int64_t every_steps = 1, std::filesystem::path csv = {});
  void on_training_begin(Trainer&) override;
  void on_batch_end(Trainer&, const BatchResult& result) override;
  void on_epoch_end(Trainer&, std::int64_t epoch) override;
  void on_training_end(Trainer&) override;
  const std::vector<Row>& rows() const noexcept { return rows_; }
  static const char* csv_header() noexcept;

 private:
  std::int64_t every_;
  std::int64_t steps_ = 0;
  std::filesystem::path path_;
  std::ofstream out_;
  std::vector<Row> rows_;
};

// One line per epoch on `out`: the epoch, its duration and the metrics.
class ProgressListener : public TrainingListener {
 public:
  explicit ProgressListener(std::ostream& out) : out_(out) {}
  void on_epoch_begin(Trainer&, std::int64_t epoch) override;
  void on_epoch_end(Trainer&, std::int64_t epoch) override;

 private:
  std::ostream& out_;
  std::chrono::steady_clock::time_point start_;
};

// ---- data-parallel hook --------------------------------------------------------------

// How a Trainer takes part in data-parallel training without the training
// layer depending on MPI: ndgc::distributed implements it
// (distributed::make_gradient_reducer in ndgc/distributed.hpp). Every call is
// collective: each rank makes it at the same point of its loop.
class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Makes every rank's parameters equal to rank 0's, bit for bit.
  virtual void broadcast_parameters(const NDList& parameters) = 0;
  // After backward(), with this rank's batch of `rows` rows: each
  // parameter's gradient g_r becomes sum_r(rows_r · g_r) / sum_r(rows_r), the
  // gradient of the mean loss over every rank's rows together.
  virtual void reduce_gradients(const NDList& parameters, std::int64_t rows) = 0;
  // Overlap with backward (optional): called before backward() with the same
  // arguments reduce_gradients will get; true means the reducer wants
  // gradient_ready(i) as each parameters[i]'s gradient is final during
  // backward (GradientCollector::backward's watch), may start sending then,
  // and reduce_gradients only finishes what was started.
  virtual bool begin_reduction(const NDList& /*parameters*/, std::int64_t /*rows*/) { return false; }
  virtual void gradient_ready(std::size_t /*index*/) {}
  // Element-wise sums over ranks, in place (the metrics' totals).
  virtual void sum(std::vector<double>& values) = 0;
};

// ---- the trainer ------------------------------------------------------------------

// DL4J's WorkspaceMode: none (ordinary memory) or enabled (each step in a workspace).
enum class WorkspaceMode : std::uint8_t { none, enabled };

// Mixed precision (docs/half-precision.md). float32: none. bfloat16, float16:
// the forward pass and the loss run in an Autocast region of that dtype
// (ndgc/autocast.hpp: matmul, conv, linear and the LSTM in 16 bits; the
// reductions, softmax, the losses and the norms in float32); parameters,
// their gradients and the optimizer's state stay float32, and the 16-bit
// copies of the parameters are made once per step in the step's memory.
enum class Precision : std::uint8_t { float32, bfloat16, float16 };
// "fp32", "bf16", "fp16" (the --precision values), and back; nullopt for another name.
std::string_view to_string(Precision p) noexcept;
std::optional<Precision> parse_precision(std::string_view name) noexcept;
// The Autocast region's dtype: DataType::float32 (none), bfloat16, float16.
DataType autocast_dtype(Precision p) noexcept;

// Dynamic loss scaling for float16, with torch.cuda.amp.GradScaler's
// semantics and defaults: the loss is multiplied by scale() before the
// backward pass and the gradients divided by it after; a step whose
// gradients hold an inf or NaN is skipped (the parameters and the optimizer's
// state are left as they were) and the scale multiplied by backoff; after
// growth_interval steps in a row without one, the scale is multiplied by growth.
struct LossScaling {
  double initial_scale = 65536.0;  // 2^16
  double growth = 2.0;
  double backoff = 0.5;
  std::int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  explicit LossScaler(LossScaling options = {});
  double scale() const noexcept { return scale_; }
  std::int64_t skipped_steps() const noexcept { return skipped_; }
  std::int64_t steps_since_growth() const noexcept { return good_steps_; }
  // After a backward pass of loss × scale(): divides `gradients` by scale()
  // and returns whether they are all finite (one host read); then updates
  // the scale. False: skip this step's update.
  bool unscale_and_update(const NDList& gradients);
  // The scale's update alone, for a step whose finiteness is known.
  void update(bool finite) noexcept;

 private:
  LossScaling options_;
  double scale_;
  std::int64_t good_steps_ = 0, skipped_ = 0;
};

struct TrainingConfig {
  std::shared_ptr<const nn::Loss> loss;      // required
  std::shared_ptr<nn::Optimizer> optimizer;  // required
  std::vector<std::shared_ptr<const Metric>> metrics;  // besides the loss, which is always measured
  std::vector<std::shared_ptr<TrainingListener>> listeners;
  // Data-parallel training when set: the Trainer broadcasts the parameters
  // from rank 0 when it is made, reduces the gradients after each backward
  // pass, and sums the metrics' totals over ranks at each epoch's end. Give
  // each rank its shard of the data (ArrayDataset::set_shard). Listeners run
  // on every rank: let one rank write files (reducer->rank() == 0).
  std::shared_ptr<GradientReducer> gradient_reducer;
  WorkspaceMode workspace_mode = WorkspaceMode::none;
  workspace::Config workspace;  // the step workspace's policies (enabled only); its device is the model's
  // CUDA graphs (ndgc/device_graph.hpp), for a model on a GPU: after
  // Trainer::kGraphWarmupSteps eager steps, the device work of a training
  // step (forward, loss, backward, update) is captured once and replayed for
  // every later batch of the same shapes, which is first copied into the
  // graph's inputs; a batch of other shapes (the last, short one) runs
  // eagerly. The optimizer is made capturable (Optimizer::set_capturable),
  // and a new learning rate is captured again. Metrics, listeners and
  // validation run as without graphs. In a replayed step an out-of-range
  // label is not reported (the check needs a host read). InvalidArgument on
  // the CPU, with a gradient reducer or with workspaces.
  bool cuda_graph = false;
  // Mixed precision (see Precision). float16 scales the loss (loss_scaling);
  // it cannot run in a CUDA graph (the scaler reads the gradients' finiteness
  // on the host every step): InvalidArgument.
  Precision precision = Precision::float32;
  LossScaling loss_scaling;
};

class Trainer {
 public:
  // The model must be initialized (InvalidArgument otherwise). Creates the
  // optimizer's state for every parameter now, in the model's manager.
  Trainer(Model& model, TrainingConfig config);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  Model& model() noexcept { return model_; }
  ManagerRef manager() const noexcept { return manager_; }
  // The model's device: where the trainer computes.
  Device device() const noexcept { return device_; }
  const TrainingConfig& config() const noexcept { return config_; }

  // Zeroes the parameters' gradients and starts recording on this thread.
  [[nodiscard]] GradientCollector new_gradient_collector();
  // The model's forward; training exactly while a collector records here
  // (train_batch passes true and validate_batch false themselves).
  NDList forward(const NDList& inputs);
  // One optimizer update of every parameter from its gradient.
  void step();
  // forward, loss, backward and step on `batch` (copied to device() first
  // if it is elsewhere); updates the training metrics and tells the
  // listeners. Returns the loss, unread (see LossValue).
  LossValue train_batch(const data::Batch& batch, std::int64_t epoch = 0);
  // forward and loss without recording; updates the validation metrics.
  LossValue validate_batch(const data::Batch& batch, std::int64_t epoch = 0);

  // Eager steps before the step is captured (cuda_graph): they make what
  // lives on (gradients, optimizer state, metric totals) outside the graph's pool.
  static constexpr std::int64_t kGraphWarmupSteps = 2;
  // Steps replayed from the captured graph so far, and how often it was captured.
  std::int64_t graph_replays() const noexcept { return graph_replays_; }
  std::int64_t graph_captures() const noexcept { return graph_captures_; }
  // The float16 loss scaler (null with another precision): its scale and skipped steps.
  const LossScaler* loss_scaler() const noexcept { return scaler_.get(); }

  // Metrics of the epoch in progress ("loss" first, then the configured ones).
  const std::vector<std::unique_ptr<Metric>>& training_metrics() const noexcept { return train_metrics_; }
  const std::vector<std::unique_ptr<Metric>>& validation_metrics() const noexcept { return validate_metrics_; }
  // Per finished epoch: "train_<metric>" and, when validated, "validate_<metric>".
  const std::vector<std::map<std::string, double>>& history() const noexcept { return history_; }

  // The events fit() raises, for loops written by hand.
  void notify_training_begin();
  void notify_epoch_begin(std::int64_t epoch);  // resets the metrics
  void notify_epoch_end(std::int64_t epoch, bool validated);  // records history()
  void notify_training_end();

  // The step workspace's name on the training thread ("" with WorkspaceMode::none).
  const std::string& workspace_name() const noexcept { return workspace_name_; }

 private:
  struct StepGraph;  // trainer.cpp
  void reduce_metrics(bool validated);
  LossValue train_step(const data::Batch& batch, std::int64_t epoch);
  LossValue validate_step(const data::Batch& batch, std::int64_t epoch);
  void run_step(const NDList& data, const NDList& labels, std::int64_t batch_size, NDList& predictions, NDArray& loss);
  bool replay_step(const NDList& data, const NDList& labels, NDList& predictions, NDArray& loss);

  Model& model_;
  TrainingConfig config_;
  Device device_;
  NDManager manager_;
  nn::ParameterList parameters_;
  NDList parameter_arrays_;
  std::vector<std::unique_ptr<Metric>> train_metrics_, validate_metrics_;
  std::vector<std::map<std::string, double>> history_;
  std::string workspace_name_;
  std::unique_ptr<StepGraph> graph_;  // after manager_: goes first (its arrays are in a sub-manager)
  std::unique_ptr<LossScaler> scaler_;
  std::int64_t graph_warmups_ = 0, graph_replays_ = 0, graph_captures_ = 0;
};

// Trains for `epochs` epochs over `train` (batches in sub-managers of the
// trainer's manager, epoch e shuffled as the dataset's settings say), and
// validates on `validation` after each epoch when given.
void fit(Trainer& trainer, std::int64_t epochs, const data::ArrayDataset& train,
         const data::ArrayDataset* validation = nullptr);

}  // namespace ndgc::training
