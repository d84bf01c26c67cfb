// Optimizers (DJL's Optimizer): update parameters in place from their
// gradients.
//
//   nn::Adam adam(1e-3);
//   adam.update(block.parameters());   // after collector.backward(loss)
//
// Each update is one fused, in-place op per parameter (one pass over its
// memory on the CPU) and is not recorded by autograd. Per-parameter state
// (momentum, Adam's moment estimates) is created once, zero-filled, in the
// parameter's manager (the model's), at the first update or by prepare():
// a training loop creates no arrays per step. Gradients are read, not
// zeroed: the Trainer zeroes them when a step begins (see
// ndgc/autograd.hpp).
// Thread-safety: one optimizer per training loop; not synchronised.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "ndgc/ndarray.hpp"
#include "ndgc/nn.hpp"

namespace ndgc::nn {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Updates every parameter of the list from its gradient.
  void update(const ParameterList& parameters);
  // Creates the state of every parameter now (before a cap() of their manager).
  void prepare(const ParameterList& parameters);
  double learning_rate() const noexcept { return learning_rate_; }
  void set_learning_rate(double learning_rate);
  // Number of update() calls so far (on the host: a replayed update is not one).
  std::int64_t update_count() const noexcept { return updates_; }
  // Capturable: whatever changes from one update to the next (Adam's step
  // count) lives in device memory and is advanced by a kernel, so an update
  // captured in a DeviceGraph (ndgc/device_graph.hpp) is right on every
  // replay. The learning rate stays an argument: after set_learning_rate(),
  // capture again (Trainer does). Off again, the host takes the count back.
  // Off by default; Trainer turns it on in cuda_graph mode.
  void set_capturable(bool on);
  bool capturable() const noexcept { return capturable_; }

 protected:
  explicit Optimizer(double learning_rate);
  virtual void update_one(Parameter& parameter) = 0;
  virtual void prepare_one(Parameter& parameter) = 0;
  // Called by set_capturable() when the mode changes. Default: nothing
  // changes between updates (SGD: its momentum is in place already).
  virtual void capturable_changed(bool /*on*/) {}
  // A zero-filled array like the parameter's, in its manager, named "<parameter>.<what>".
  static NDArray new_state(const Parameter& parameter, const char* what);

 private:
  double learning_rate_;
  std::int64_t updates_ = 0;
  bool capturable_ = false;
};

// Stochastic gradient descent with optional momentum and L2 weight decay.
// Where a momentum value decays below the smallest normal number, the update
// stores zero instead (as Adam does with its moments; see Adam).
class Sgd : public Optimizer {
 public:
  explicit Sgd(double learning_rate, double momentum = 0, double weight_decay = 0);

 protected:
  void update_one(Parameter& parameter) override;
  void prepare_one(Parameter& parameter) override;

 private:
  double momentum_, weight_decay_;
  std::unordered_map<const Parameter*, NDArray> velocity_;
};

// Adam (Kingma & Ba), bias-corrected, with L2 weight decay added to the
// gradient (PyTorch's Adam): see ops AdamHyper for the exact formula.
// Differs from it in one way: a moment that decays below the smallest normal
// number (1.2e-38 for float32), as the moments of a weight whose gradient
// stays zero do, is stored as zero. Denormals never decay to zero under
// rounding and are slow to compute on x86; the weight they would move by is
// below 1e-30. (Contiguous state, the usual case; strided state is updated
// as written.) Capturable, it keeps each parameter's step count in a 0-d
// float64 array beside its moments ("<parameter>.adam_steps"), and its
// update needs contiguous state (InvalidArgument otherwise).
class Adam : public Optimizer {
 public:
  explicit Adam(double learning_rate = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double epsilon = 1e-8,
                double weight_decay = 0);

 protected:
  void update_one(Parameter& parameter) override;
  void prepare_one(Parameter& parameter) override;
  void capturable_changed(bool on) override;

 private:
  struct State {
    NDArray mean, variance;
    std::int64_t steps = 0;  // on the host; while capturable, `device_steps` is the count
    NDArray device_steps;
  };
  State& state(Parameter& parameter);
  // 1 - β1^t and 1 - β2^t for a step count t. Every parameter usually has
  // the same count, so the last pair is kept: two powers a step, not two a
  // parameter.
  struct Corrections {
    std::int64_t steps = -1;  // none computed yet
    double first = 0, second = 0;
  };
  const Corrections& corrections(std::int64_t steps);
  double beta1_, beta2_, epsilon_, weight_decay_;
  std::unordered_map<const Parameter*, State> states_;
  Corrections corrections_;
};

}  // namespace ndgc::nn
