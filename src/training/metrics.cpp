// Metrics: accuracy and mean loss. Computed without recording, with the
// predictions first so the temporaries stay in the batch's manager.
//
// Each keeps its running totals on the host; on a GPU (a manager() on the
// batch's device, which the Trainer gives), accumulate() adds each batch's
// share into a 0-d array on the device instead, so no step waits for the
// device (Note [Deferred loss] in trainer.cpp). Reading folds that array in:
// value() and totals() read it; reset() and set_totals() zero it in place
// (one array per metric for the trainer's life, not one per epoch).
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/training.hpp"

namespace ndgc::training {
namespace {

// Whether a batch whose arrays are on `device` adds up on the device: a GPU
// with a manager there to keep the total in.
bool on_device(const Metric& m, Device device) {
  return !device.is_cpu() && m.manager().defined() && m.manager().is_open() && m.manager().device() == device;
}

// The 0-d running total in `slot`, made (zero) in the metric's manager on
// first use; outside any workspace, since it outlives the step.
NDArray& device_total(const Metric& m, NDArray& slot, DataType dtype) {
  if (!slot.defined() || slot.is_closed()) {
    workspace::ScopeOut out;
    slot = m.manager().zeros(Shape{}, dtype);
    slot.set_name(m.name() + ".total");
  }
  return slot;
}

template <class T>
T read(const NDArray& slot) {
  return slot.defined() && !slot.is_closed() ? slot.item<T>() : T(0);
}

void zero(NDArray& slot) {
  if (slot.defined() && !slot.is_closed()) slot.fill_(0);
}

// The number of rows whose arg-max prediction is the label, as a 0-d int64
// array on the predictions' device; `rows` gets the row count.
NDArray correct_rows(const NDList& labels, const NDList& predictions, std::int64_t& rows) {
  autograd::NoGradient pause;
  const NDArray& pred = predictions.head();
  NDArray predicted = pred.argmax(-1);  // [rows...] int64
  NDArray label = labels.head();
  const Shape shape = predicted.shape();
  if (label.shape().size() != shape.size())
    throw ShapeMismatch(fmt::format("Accuracy: {} labels for {} predictions {}", label.shape().size(), shape.size(),
                                    pred.shape().to_string()));
  if (label.dtype() != DataType::int64) label = label.to_type(DataType::int64);
  if (!(label.shape() == shape)) label = label.reshape(shape);
  rows = shape.size();
  NDArray count = predicted.eq(label).sum();
  return count.dtype() == DataType::int64 ? count : count.to_type(DataType::int64);
}

std::int64_t rows_of(const NDList& predictions) {
  const Shape s = predictions.head().shape();
  return s.rank() ? s[0] : 1;
}

}  // namespace

void Accuracy::reset() {
  correct_ = total_ = 0;
  zero(device_correct_);
}

void Accuracy::update(const NDList& labels, const NDList& predictions, double) {
  std::int64_t rows = 0;
  correct_ += correct_rows(labels, predictions, rows).item<std::int64_t>();
  total_ += rows;
}

void Accuracy::accumulate(const NDList& labels, const NDList& predictions, const LossValue&) {
  if (!on_device(*this, predictions.head().device())) {
    update(labels, predictions, 0.0);  // the loss is not used: not read
    return;
  }
  std::int64_t rows = 0;
  NDArray count = correct_rows(labels, predictions, rows);
  autograd::NoGradient pause;
  device_total(*this, device_correct_, DataType::int64).add_(count);
  total_ += rows;
}

double Accuracy::value() const {
  const std::int64_t correct = correct_ + read<std::int64_t>(device_correct_);
  return total_ ? double(correct) / double(total_) : std::numeric_limits<double>::quiet_NaN();
}

std::vector<double> Accuracy::totals() const {
  return {double(correct_ + read<std::int64_t>(device_correct_)), double(total_)};
}

void Accuracy::set_totals(const std::vector<double>& t) {
  correct_ = std::int64_t(t.at(0)), total_ = std::int64_t(t.at(1));
  zero(device_correct_);
}

void LossMetric::reset() {
  sum_ = 0, rows_ = 0;
  zero(device_sum_);
}

void LossMetric::update(const NDList& labels, const NDList& predictions, double loss) {
  (void)labels;
  const std::int64_t rows = rows_of(predictions);
  sum_ += loss * double(rows);
  rows_ += rows;
}

void LossMetric::accumulate(const NDList& labels, const NDList& predictions, const LossValue& loss) {
  const NDArray& array = loss.array();
  if (loss.is_read() || !array.defined() || !on_device(*this, array.device())) {
    update(labels, predictions, loss.value());
    return;
  }
  autograd::NoGradient pause;
  const std::int64_t rows = rows_of(predictions);
  device_total(*this, device_sum_, DataType::float64).add_(array.to_type(DataType::float64).mul(double(rows)));
  rows_ += rows;
}

double LossMetric::value() const {
  const double sum = sum_ + read<double>(device_sum_);
  return rows_ ? sum / double(rows_) : std::numeric_limits<double>::quiet_NaN();
}

std::vector<double> LossMetric::totals() const { return {sum_ + read<double>(device_sum_), double(rows_)}; }

void LossMetric::set_totals(const std::vector<double>& t) {
  sum_ = t.at(0), rows_ = std::int64_t(t.at(1));
  zero(device_sum_);
}

}  // namespace ndgc::training
