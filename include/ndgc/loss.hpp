// Losses (DJL's Loss): a scalar from labels and predictions, averaged over
// the batch.
//
//   nn::SoftmaxCrossEntropyLoss loss;
//   NDArray l = loss.evaluate(NDList{labels}, NDList{logits});   // scalar, in logits' manager
//   collector.backward(l);
//
// Every loss computes with the predictions first, so its temporaries and its
// result join the predictions' manager (the batch's, in a training step).
// Thread-safety: evaluate() is const and may run on several threads at once.
#pragma once

#include <string>

#include "ndgc/ndarray.hpp"
#include "ndgc/ndlist.hpp"

namespace ndgc::nn {

class Loss {
 public:
  explicit Loss(std::string name) : name_(std::move(name)) {}
  virtual ~Loss() = default;
  const std::string& name() const noexcept { return name_; }
  // The batch mean of the loss: a scalar of the predictions' dtype.
  virtual NDArray evaluate(const NDList& labels, const NDList& predictions) const = 0;

 private:
  std::string name_;
};

// Cross entropy of softmax(predictions) against the labels, fused as
// -mean(pick(log_softmax(predictions), label)).
//  - sparse labels (default): class indices [B] (or [B, 1]), integer or
//    floating; out-of-range indices raise InvalidArgument.
//  - dense labels: a distribution per row, the predictions' shape.
// from_log_probabilities: predictions are log-probabilities already (skip
// log_softmax). The class axis is the last.
class SoftmaxCrossEntropyLoss : public Loss {
 public:
  explicit SoftmaxCrossEntropyLoss(std::string name = "SoftmaxCrossEntropyLoss", bool sparse_labels = true,
                                   bool from_log_probabilities = false)
      : Loss(std::move(name)), sparse_(sparse_labels), from_log_(from_log_probabilities) {}
  NDArray evaluate(const NDList& labels, const NDList& predictions) const override;

 private:
  bool sparse_, from_log_;
};

// weight · mean((prediction - label)²), weight 1/2 by default (DJL's L2Loss).
class L2Loss : public Loss {
 public:
  explicit L2Loss(std::string name = "L2Loss", double weight = 0.5) : Loss(std::move(name)), weight_(weight) {}
  NDArray evaluate(const NDList& labels, const NDList& predictions) const override;

 private:
  double weight_;
};

// weight · mean(|prediction - label|).
class L1Loss : public Loss {
 public:
  explicit L1Loss(std::string name = "L1Loss", double weight = 1.0) : Loss(std::move(name)), weight_(weight) {}
  NDArray evaluate(const NDList& labels, const NDList& predictions) const override;

 private:
  double weight_;
};

}  // namespace ndgc::nn
