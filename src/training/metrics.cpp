// Metrics: accuracy and mean loss. Computed without recording, with the
// predictions first so the temporaries stay in the batch's manager.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/training.hpp"

namespace ndgc::training {

void Accuracy::update(const NDList& labels, const NDList& predictions, double) {
  autograd::NoGradient pause;
  const NDArray& pred = predictions.head();
  NDArray predicted = pred.argmax(-1);  // [rows...] int64
  NDArray label = labels.head();
  const Shape rows = predicted.shape();
  if (label.shape().size() != rows.size())
    throw ShapeMismatch(fmt::format("Accuracy: {} labels for {} predictions {}", label.shape().size(), rows.size(),
                                    pred.shape().to_string()));
  if (label.dtype() != DataType::int64) label = label.to_type(DataType::int64);
  if (!(label.shape() == rows)) label = label.reshape(rows);
  correct_ += predicted.eq(label).sum().item<std::int64_t>();
  total_ += rows.size();
}

double Accuracy::value() const {
  return total_ ? double(correct_) / double(total_) : std::numeric_limits<double>::quiet_NaN();
}

void LossMetric::update(const NDList& labels, const NDList& predictions, double loss) {
  (void)labels;
  const Shape s = predictions.head().shape();
  const std::int64_t rows = s.rank() ? s[0] : 1;
  sum_ += loss * double(rows);
  rows_ += rows;
}

double LossMetric::value() const { return rows_ ? sum_ / double(rows_) : std::numeric_limits<double>::quiet_NaN(); }

}  // namespace ndgc::training
