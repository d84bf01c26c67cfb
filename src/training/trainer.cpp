// Trainer: the model's parameters, the optimizer and loss, metrics and
// listeners, and one training step. Manager layout in ndgc/training.hpp.
//
// Note [Deferred loss]
// A step used to end with loss.item(): on a GPU that waits for the whole
// step's kernels and copies 4 bytes back, every step, although most loops
// (fit() among them) never look at the number. So a step hands out the
// loss as a LossValue (the 0-d array and a lazily read double) to the
// metrics, the listeners and its caller, and whoever asks pays the read.
// On the CPU the read is a plain load, and LossMetric still takes it per
// step on the host (bit-for-bit the old sums, no extra op per step); on a
// GPU, LossMetric and Accuracy add into device arrays instead, read when
// the epoch's value is asked for. LossValue converts to double, so callers
// that wrote `double loss = trainer.train_batch(b)` compile and read as
// before; existing Metric subclasses keep update(double), which the default
// accumulate() feeds by reading the loss.
//
// Note [Captured steps]
// With cuda_graph, a training step is a DeviceGraph replay. What the graph
// needs, and where it comes from:
//   - inputs at fixed addresses: the StepGraph's own copies of a batch's
//     arrays, in a sub-manager of the trainer's, refilled (assign_) before
//     each replay. Every array the capture makes joins that sub-manager
//     (an op's output joins its first input's), so it lives as long as the
//     graph whatever auto-close does to it, and its memory comes from the
//     graph's private pool either way;
//   - state that lives on at fixed addresses: parameters, gradients (zeroed
//     and accumulated in place), optimizer state and metric totals, all made
//     by the kGraphWarmupSteps eager steps before the capture;
//   - nothing the host computes per step: the optimizer is capturable, and a
//     new learning rate drops the graph so the next step captures again.
// The metrics and listeners run on the host after the replay, on copies of
// the graph's predictions and loss in the batch's manager, as the eager
// step's are: what the metrics make from them (Accuracy's arg-max) joins
// the batch and closes with it instead of piling up in the graph's manager,
// and a later replay cannot change a value someone reads late.
#include <atomic>
#include <optional>

#include <fmt/format.h>

#include "ndgc/device_graph.hpp"
#include "ndgc/autocast.hpp"
#include "ndgc/error.hpp"
#include "ndgc/training.hpp"

namespace ndgc::training {
namespace {

void make_metrics(const TrainingConfig& config, const ManagerRef& manager, std::vector<std::unique_ptr<Metric>>& out) {
  out.clear();
  out.push_back(std::make_unique<LossMetric>());
  for (const auto& m : config.metrics) {
    if (!m) throw InvalidArgument("Trainer: a metric in the configuration is null");
    out.push_back(m->clone());
  }
  for (auto& m : out) m->set_manager(manager);
}

// `list` itself when every array is on `device`, else a list of copies there
// in `moved` (each joining its source's manager: the batch's). No allocation
// when nothing moves (issue 16's per-step budget).
const NDList& on_device(const NDList& list, Device device, NDList& moved) {
  for (const NDArray& a : list)
    if (a.device() != device) {
      moved = list.to_device(device);
      return moved;
    }
  return list;
}

// The same shapes and dtypes, array by array.
bool same_layout(const NDList& a, const NDList& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i].shape() == b[i].shape()) || a[i].dtype() != b[i].dtype()) return false;
  return true;
}

// A copy of `a` in `manager`, at an address of its own: one kernel.
NDArray copy_in(const ManagerRef& manager, const NDArray& a) {
  NDArray c = a.dup();
  c.attach(manager);
  return c;
}

NDList copies_in(const ManagerRef& manager, const NDList& list) {
  NDList out;
  for (const NDArray& a : list) out.push_back(copy_in(manager, a));
  return out;
}

void refill(const NDList& into, const NDList& from) {
  for (std::size_t i = 0; i < into.size(); ++i) NDArray(into[i]).assign_(from[i]);
}

}  // namespace

// See Note [Captured steps].
struct Trainer::StepGraph {
  NDManager manager;
  NDList data, labels, predictions;
  NDArray loss;
  double learning_rate = 0;
  std::optional<DeviceGraph> graph;
};

double LossValue::value() const {
  if (!read_) {
    value_ = array_.item<double>();
    read_ = true;
  }
  return value_;
}

Trainer::Trainer(Model& model, TrainingConfig config)
    : model_(model), config_(std::move(config)), device_(model.manager().device()) {
  if (!config_.loss) throw InvalidArgument("Trainer: the configuration has no loss");
  if (!config_.optimizer) throw InvalidArgument("Trainer: the configuration has no optimizer");
  if (!model_.block().is_initialized())
    throw InvalidArgument(fmt::format(
        "Trainer: model '{}' is not initialized; call model.initialize(input_shape) (or load()) first", model_.name()));
  for (const auto& l : config_.listeners)
    if (!l) throw InvalidArgument("Trainer: a listener in the configuration is null");
  if (config_.cuda_graph && config_.precision == Precision::float16)
    throw InvalidArgument("Trainer: float16's loss scaler reads the gradients on the host every step, which a CUDA "
                          "graph cannot; use bfloat16 with cuda_graph");
  if (config_.cuda_graph) {
    if (device_.is_cpu())
      throw InvalidArgument(fmt::format("Trainer: cuda_graph needs a model on a GPU; model '{}' is on {}",
                                        model_.name(), device_.to_string()));
    if (config_.gradient_reducer)
      throw InvalidArgument("Trainer: cuda_graph cannot capture a gradient reducer's collectives; turn one off");
    if (config_.workspace_mode == WorkspaceMode::enabled)
      throw InvalidArgument("Trainer: cuda_graph and workspaces both own the step's memory; turn one off");
    config_.optimizer->set_capturable(true);
  }
  if (config_.precision == Precision::float16) scaler_ = std::make_unique<LossScaler>(config_.loss_scaling);
  parameters_ = model_.block().trainable_parameters();  // running statistics have no gradient
  for (const nn::NamedParameter& p : parameters_) parameter_arrays_.push_back(p.parameter->array());
  config_.optimizer->prepare(parameters_);
  manager_ = model_.manager().new_sub_manager("trainer");
  make_metrics(config_, manager_, train_metrics_);
  make_metrics(config_, manager_, validate_metrics_);
  config_.workspace.device = device_;  // the step's arrays are on the model's device
  if (config_.gradient_reducer) {  // every rank starts from rank 0's parameters and running statistics
    NDList everything;
    for (const nn::NamedParameter& p : model_.parameters()) everything.push_back(p.parameter->array());
    config_.gradient_reducer->broadcast_parameters(everything);
  }
  if (config_.workspace_mode == WorkspaceMode::enabled) {
    static std::atomic<std::uint64_t> next{1};
    workspace_name_ = fmt::format("TRAINER_STEP_{}", next.fetch_add(1, std::memory_order_relaxed));
  }
}

Trainer::~Trainer() {
  // On the thread that trained; another thread's copy goes when that thread ends.
  if (!workspace_name_.empty()) {
    try {
      workspace::destroy(workspace_name_);
    } catch (const Error&) {
    }
  }
}

GradientCollector Trainer::new_gradient_collector() {
  autograd::zero_gradients(parameter_arrays_);
  return GradientCollector();
}

NDList Trainer::forward(const NDList& inputs) { return model_.block().forward(inputs); }

void Trainer::step() { config_.optimizer->update(parameters_); }

LossValue Trainer::train_batch(const data::Batch& batch, std::int64_t epoch) {
  if (workspace_name_.empty()) return train_step(batch, epoch);
  workspace::Scope ws = workspace::activate(config_.workspace, workspace_name_);
  return train_step(batch, epoch);
}

LossValue Trainer::validate_batch(const data::Batch& batch, std::int64_t epoch) {
  if (workspace_name_.empty()) return validate_step(batch, epoch);
  workspace::Scope ws = workspace::activate(config_.workspace, workspace_name_);
  return validate_step(batch, epoch);
}

// The device work of a step: forward, loss, backward, all-reduce, update.
void Trainer::run_step(const NDList& data, const NDList& labels, std::int64_t batch_size, NDList& predictions,
                       NDArray& loss) {
  {
    GradientCollector collector = new_gradient_collector();
    {
      Autocast region(autocast_dtype(config_.precision));  // float32: none
      predictions = model_.block().forward(data, /*training=*/true);
      loss = config_.loss->evaluate(labels, predictions);
    }
    const NDArray scaled = scaler_ ? loss.mul(scaler_->scale()) : loss;  // Note [Loss scaling]
    GradientReducer* reducer = config_.gradient_reducer.get();
    if (reducer && reducer->begin_reduction(parameter_arrays_, batch_size))  // all-reduces start during backward
      collector.backward(scaled, parameter_arrays_, [reducer](std::size_t i) { reducer->gradient_ready(i); });
    else
      collector.backward(scaled);
  }
  if (config_.gradient_reducer) config_.gradient_reducer->reduce_gradients(parameter_arrays_, batch_size);
  if (scaler_) {
    NDList gradients;
    for (const NDArray& p : parameter_arrays_) gradients.push_back(p.gradient());
    if (!scaler_->unscale_and_update(gradients)) return;  // an inf or NaN: the update is skipped
  }
  step();
}

// A step as a replay of the captured graph, capturing it first if need be;
// false when this step runs eagerly. See Note [Captured steps].
bool Trainer::replay_step(const NDList& data, const NDList& labels, NDList& predictions, NDArray& loss) {
  if (!config_.cuda_graph) return false;
  if (graph_warmups_ < kGraphWarmupSteps) {
    ++graph_warmups_;
    return false;
  }
  if (graph_ && graph_->learning_rate != config_.optimizer->learning_rate()) graph_.reset();
  if (graph_ && !(same_layout(graph_->data, data) && same_layout(graph_->labels, labels))) return false;
  if (!graph_) {
    auto g = std::make_unique<StepGraph>();
    g->manager = manager_.new_sub_manager("cuda graph");
    g->data = copies_in(g->manager, data);
    g->labels = copies_in(g->manager, labels);
    g->learning_rate = config_.optimizer->learning_rate();
    // The batch size only matters to a gradient reducer, which graph mode refuses.
    g->graph.emplace(DeviceGraph::capture(device_, [&] { run_step(g->data, g->labels, 0, g->predictions, g->loss); }));
    graph_ = std::move(g);
    ++graph_captures_;
  } else {
    refill(graph_->data, data);
    refill(graph_->labels, labels);
  }
  graph_->graph->replay();
  ++graph_replays_;
  // Copies where the eager step's would be (the batch's manager), so what the
  // metrics make from them closes with the batch: Note [Captured steps].
  const ManagerRef batch = data[0].manager();
  predictions = copies_in(batch, graph_->predictions);
  loss = copy_in(batch, graph_->loss);
  return true;
}

LossValue Trainer::train_step(const data::Batch& batch, std::int64_t epoch) {
  NDList moved_data, moved_labels;
  const NDList& data = on_device(batch.data, device_, moved_data);
  const NDList& labels = on_device(batch.labels, device_, moved_labels);
  NDList predictions;
  NDArray loss;
  if (!replay_step(data, labels, predictions, loss)) run_step(data, labels, batch.size, predictions, loss);
  const LossValue value(std::move(loss));  // read by whoever asks: Note [Deferred loss]
  for (auto& m : train_metrics_) m->accumulate(labels, predictions, value);
  const BatchResult result{epoch, batch.index, batch.size, value, true};
  for (auto& l : config_.listeners) l->on_batch_end(*this, result);
  return result.loss;
}

LossValue Trainer::validate_step(const data::Batch& batch, std::int64_t epoch) {
  autograd::NoGradient pause;
  NDList moved_data, moved_labels;
  const NDList& data = on_device(batch.data, device_, moved_data);
  const NDList& labels = on_device(batch.labels, device_, moved_labels);
  Autocast region(autocast_dtype(config_.precision));
  NDList predictions = model_.block().forward(data, /*training=*/false);
  const LossValue value(config_.loss->evaluate(labels, predictions));
  for (auto& m : validate_metrics_) m->accumulate(labels, predictions, value);
  const BatchResult result{epoch, batch.index, batch.size, value, false};
  for (auto& l : config_.listeners) l->on_batch_end(*this, result);
  return result.loss;
}

// Sums every metric's totals over ranks in one call (the same metrics, in
// the same order, on every rank). Metrics without totals stay per rank.
void Trainer::reduce_metrics(bool validated) {
  std::vector<Metric*> metrics;
  for (auto& m : train_metrics_) metrics.push_back(m.get());
  if (validated)
    for (auto& m : validate_metrics_) metrics.push_back(m.get());
  std::vector<double> all;
  std::vector<std::size_t> counts;
  for (Metric* m : metrics) {
    std::vector<double> t = m->totals();
    counts.push_back(t.size());
    all.insert(all.end(), t.begin(), t.end());
  }
  config_.gradient_reducer->sum(all);
  std::size_t at = 0;
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    if (counts[i] > 0)
      metrics[i]->set_totals(std::vector<double>(all.begin() + std::ptrdiff_t(at), all.begin() + std::ptrdiff_t(at + counts[i])));
    at += counts[i];
  }
}

void Trainer::notify_training_begin() {
  for (auto& l : config_.listeners) l->on_training_begin(*this);
}

void Trainer::notify_epoch_begin(std::int64_t epoch) {
  for (auto& m : train_metrics_) m->reset();
  for (auto& m : validate_metrics_) m->reset();
  for (auto& l : config_.listeners) l->on_epoch_begin(*this, epoch);
}

void Trainer::notify_epoch_end(std::int64_t epoch, bool validated) {
  if (config_.gradient_reducer) reduce_metrics(validated);
  std::map<std::string, double> row;
  for (auto& m : train_metrics_) row["train_" + m->name()] = m->value();
  if (validated)
    for (auto& m : validate_metrics_) row["validate_" + m->name()] = m->value();
  history_.push_back(std::move(row));
  for (auto& l : config_.listeners) l->on_epoch_end(*this, epoch);
}

void Trainer::notify_training_end() {
  for (auto& l : config_.listeners) l->on_training_end(*this);
}

}  // namespace ndgc::training
