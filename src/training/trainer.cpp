// Trainer: the model's parameters, the optimizer and loss, metrics and
// listeners, and one training step. Manager layout in ndgc/training.hpp.
#include <atomic>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/training.hpp"

namespace ndgc::training {
namespace {

void make_metrics(const TrainingConfig& config, std::vector<std::unique_ptr<Metric>>& out) {
  out.clear();
  out.push_back(std::make_unique<LossMetric>());
  for (const auto& m : config.metrics) {
    if (!m) throw InvalidArgument("Trainer: a metric in the configuration is null");
    out.push_back(m->clone());
  }
}

}  // namespace

Trainer::Trainer(Model& model, TrainingConfig config) : model_(model), config_(std::move(config)) {
  if (!config_.loss) throw InvalidArgument("Trainer: the configuration has no loss");
  if (!config_.optimizer) throw InvalidArgument("Trainer: the configuration has no optimizer");
  if (!model_.block().is_initialized())
    throw InvalidArgument(fmt::format(
        "Trainer: model '{}' is not initialized; call model.initialize(input_shape) (or load()) first", model_.name()));
  for (const auto& l : config_.listeners)
    if (!l) throw InvalidArgument("Trainer: a listener in the configuration is null");
  parameters_ = model_.parameters();
  for (const nn::NamedParameter& p : parameters_) parameter_arrays_.push_back(p.parameter->array());
  config_.optimizer->prepare(parameters_);
  make_metrics(config_, train_metrics_);
  make_metrics(config_, validate_metrics_);
  manager_ = model_.manager().new_sub_manager("trainer");
  if (config_.gradient_reducer) config_.gradient_reducer->broadcast_parameters(parameter_arrays_);
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

double Trainer::train_batch(const data::Batch& batch, std::int64_t epoch) {
  if (workspace_name_.empty()) return train_step(batch, epoch);
  workspace::Scope ws = workspace::activate(config_.workspace, workspace_name_);
  return train_step(batch, epoch);
}

double Trainer::validate_batch(const data::Batch& batch, std::int64_t epoch) {
  if (workspace_name_.empty()) return validate_step(batch, epoch);
  workspace::Scope ws = workspace::activate(config_.workspace, workspace_name_);
  return validate_step(batch, epoch);
}

double Trainer::train_step(const data::Batch& batch, std::int64_t epoch) {
  NDList predictions;
  double loss_value;
  {
    GradientCollector collector = new_gradient_collector();
    predictions = forward(batch.data);
    NDArray loss = config_.loss->evaluate(batch.labels, predictions);
    GradientReducer* reducer = config_.gradient_reducer.get();
    if (reducer && reducer->begin_reduction(parameter_arrays_, batch.size))  // all-reduces start during backward
      collector.backward(loss, parameter_arrays_, [reducer](std::size_t i) { reducer->gradient_ready(i); });
    else
      collector.backward(loss);
    loss_value = loss.item<double>();
  }
  if (config_.gradient_reducer) config_.gradient_reducer->reduce_gradients(parameter_arrays_, batch.size);
  step();
  for (auto& m : train_metrics_) m->update(batch.labels, predictions, loss_value);
  const BatchResult result{epoch, batch.index, batch.size, loss_value, true};
  for (auto& l : config_.listeners) l->on_batch_end(*this, result);
  return loss_value;
}

double Trainer::validate_step(const data::Batch& batch, std::int64_t epoch) {
  autograd::NoGradient pause;
  NDList predictions = forward(batch.data);
  const double loss_value = config_.loss->evaluate(batch.labels, predictions).item<double>();
  for (auto& m : validate_metrics_) m->update(batch.labels, predictions, loss_value);
  const BatchResult result{epoch, batch.index, batch.size, loss_value, false};
  for (auto& l : config_.listeners) l->on_batch_end(*this, result);
  return loss_value;
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
