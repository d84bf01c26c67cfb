// Losses: cross entropy, L2 and L1.
//
// Sparse labels on logits go through ndgc::sparse_softmax_cross_entropy, one
// fused kernel each way (Note [Fused cross-entropy]). Dense labels, and
// predictions that are already log-probabilities, pick the label's
// log-probability with a product (one_hot is not recorded: labels need no
// gradient): log_softmax → mul → sum → mul.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/loss.hpp"

namespace ndgc::nn {
namespace {

void check_pair(const char* loss, const NDList& labels, const NDList& predictions) {
  if (labels.empty() || predictions.empty())
    throw InvalidArgument(fmt::format("{}: needs a label and a prediction array (got {} and {})", loss,
                                      labels.size(), predictions.size()));
}

}  // namespace

NDArray SoftmaxCrossEntropyLoss::evaluate(const NDList& labels, const NDList& predictions) const {
  check_pair("SoftmaxCrossEntropyLoss", labels, predictions);
  const NDArray& pred = predictions.head();
  NDArray label = labels.head();
  const Shape ps = pred.shape();
  if (ps.rank() < 1) throw InvalidArgument("SoftmaxCrossEntropyLoss: the predictions need a class axis");
  const std::int64_t classes = ps[ps.rank() - 1];
  const std::int64_t rows = classes > 0 ? ps.size() / classes : 0;
  if (sparse_ && label.shape().size() != rows)
    throw ShapeMismatch(fmt::format(
        "SoftmaxCrossEntropyLoss: {} labels for {} rows of predictions {}; sparse labels hold one class "
        "index per row",
        label.shape().size(), rows, ps.to_string()));
  if (sparse_ && !from_log_) return sparse_softmax_cross_entropy(pred, label);
  NDArray logp = from_log_ ? pred : pred.log_softmax(-1);
  NDArray target;
  if (sparse_) {
    Shape ls = label.shape();
    if (is_floating(label.dtype())) label = label.to_type(DataType::int64);
    Shape row_shape = ps;
    row_shape.erase(row_shape.rank() - 1);
    if (!(ls == row_shape)) label = label.reshape(row_shape);
    target = label.one_hot(classes, pred.dtype());
  } else {
    if (!(label.shape() == ps))
      throw ShapeMismatch(fmt::format("SoftmaxCrossEntropyLoss: dense labels {} must match the predictions {}",
                                      label.shape().to_string(), ps.to_string()));
    target = label.dtype() == pred.dtype() ? label : label.to_type(pred.dtype());
  }
  return logp.mul(target).sum().mul(rows > 0 ? -1.0 / double(rows) : 0.0);
}

NDArray L2Loss::evaluate(const NDList& labels, const NDList& predictions) const {
  check_pair("L2Loss", labels, predictions);
  return predictions.head().sub(labels.head()).square().mean().mul(weight_);
}

NDArray L1Loss::evaluate(const NDList& labels, const NDList& predictions) const {
  check_pair("L1Loss", labels, predictions);
  return predictions.head().sub(labels.head()).abs().mean().mul(weight_);
}

}  // namespace ndgc::nn
