// --leak model: the DJL 0.20 failure, written as a user writes it.
//
// After every training step this listener logs two numbers, as DJL users do
// from a TrainingListener: an L2 penalty of the output layer's weight, and
// the global norm of the gradients, found by walking the arrays of the
// model's manager (what DJL 0.20's own gradient zeroing did). Both are
// computed by ops whose first input lives in the model's manager: a parameter
// (`param.array()`) and a gradient (`a.gradient()`). An op's output joins
// its first input's manager (docs/design.md §4), so every step adds 20 arrays
// (~2.6 KB) to the model's manager, not to the step's batch manager:
//
//   - auto-close off: they stay until the model closes. Bytes and live
//     arrays grow every epoch, and the walk below (like anything else that
//     walks the manager) gets longer every step: epochs get slower.
//   - auto-close on (or trace): each result is closed once its last handle
//     dies, at the next library call. Nothing grows.
//
// The two lines marked LEAK are the ones the leak report names (the tests
// find them by that marker).
#include "leak.hpp"

#include <cmath>

namespace ndgc::train_tool {
namespace {

class ModelLeak : public training::TrainingListener {
 public:
  explicit ModelLeak(Model& model) {
    for (const nn::NamedParameter& p : model.parameters())
      if (p.parameter->kind() == nn::Parameter::Kind::weight) head_weight_ = p.parameter;  // the last: the output layer
  }

  void on_batch_end(training::Trainer& trainer, const training::BatchResult& batch) override {
    if (!batch.training || !head_weight_) return;
    const NDArray& w = head_weight_->array();
    penalty_ = w.square().sum().item<double>();  // LEAK: w is a parameter, so square() and sum() join the model's manager
    double squares = 0;
    for (const NDArray& a : trainer.model().manager().managed_arrays())  // walks every array of the model's manager
      if (a.requires_gradient()) {
        NDArray g = a.gradient();
        squares += g.flatten().matmul(g.flatten()).item<double>();  // LEAK: a gradient read: flatten() and matmul() join the model's manager
      }
    gradient_norm_ = std::sqrt(squares);
  }

 private:
  const nn::Parameter* head_weight_ = nullptr;
  double penalty_ = 0, gradient_norm_ = 0;  // what a user would log
};

}  // namespace

std::shared_ptr<training::TrainingListener> make_model_leak(Model& model) { return std::make_shared<ModelLeak>(model); }

}  // namespace ndgc::train_tool
