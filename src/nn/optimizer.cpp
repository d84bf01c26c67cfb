// Optimizers: the shared loop, SGD and Adam over the fused update ops
// (ops/optimizer_update.hpp). State arrays are made once per parameter.
#include <cmath>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/optimizer.hpp"
#include "ops/optimizer_update.hpp"

namespace ndgc::nn {

Optimizer::Optimizer(double learning_rate) { set_learning_rate(learning_rate); }

void Optimizer::set_learning_rate(double learning_rate) {
  if (!(learning_rate >= 0) || !std::isfinite(learning_rate))
    throw InvalidArgument(fmt::format("Optimizer: the learning rate must be finite and >= 0, not {}", learning_rate));
  learning_rate_ = learning_rate;
}

// Note [Capturable optimizers]
// A DeviceGraph replays an update's kernels with the arguments they had
// when captured. Adam's bias corrections depend on the step count t, which
// the host used to compute and pass in: a replay would repeat the captured
// step's t forever. Capturable, the count is a 0-d float64 array on the
// parameter's device that a kernel increments (add_, captured too) and the
// fused kernel reads where it runs (ops/optimizer_math.hpp apply_steps),
// with the host's formula, so an eager step and a replayed one compute the
// same bits on the CPU and the same maths on the GPU. The arrays are made
// from the host's count when the mode goes on, and the host reads them back
// when it goes off. SGD and the learning rate need nothing: SGD's state is
// updated in place, and a changed learning rate is a new capture.
void Optimizer::set_capturable(bool on) {
  if (on == capturable_) return;
  capturable_changed(on);
  capturable_ = on;
}

void Optimizer::update(const ParameterList& parameters) {
  for (const NamedParameter& p : parameters) update_one(*p.parameter);
  ++updates_;
}

void Optimizer::prepare(const ParameterList& parameters) {
  for (const NamedParameter& p : parameters) prepare_one(*p.parameter);
}

NDArray Optimizer::new_state(const Parameter& parameter, const char* what) {
  const NDArray& w = parameter.array();
  NDArray state = w.manager().zeros(w.shape(), w.dtype());
  state.set_name(parameter.name() + "." + what);
  return state;
}

namespace {

// The state array of `p` for its current array (re-made if the parameter's
// array changed shape or dtype, e.g. after Model::load into a fresh block).
bool fits(const NDArray& state, const Parameter& p) {
  return state.defined() && !state.is_closed() && state.shape() == p.array().shape() &&
         state.dtype() == p.array().dtype();
}

}  // namespace

Sgd::Sgd(double learning_rate, double momentum, double weight_decay)
    : Optimizer(learning_rate), momentum_(momentum), weight_decay_(weight_decay) {
  if (!(momentum >= 0 && momentum < 1)) throw InvalidArgument(fmt::format("Sgd: momentum {} is not in [0, 1)", momentum));
  if (!(weight_decay >= 0)) throw InvalidArgument(fmt::format("Sgd: weight decay {} is negative", weight_decay));
}

void Sgd::prepare_one(Parameter& p) {
  if (momentum_ == 0) return;
  NDArray& v = velocity_[&p];
  if (!fits(v, p)) v = new_state(p, "momentum");
}

void Sgd::update_one(Parameter& p) {
  prepare_one(p);
  const NDArray& w = p.array();
  NDArray none;
  ops::sgd_update(w, w.gradient(), momentum_ == 0 ? none : velocity_[&p],
                  {.learning_rate = learning_rate(), .momentum = momentum_, .weight_decay = weight_decay_});
}

Adam::Adam(double learning_rate, double beta1, double beta2, double epsilon, double weight_decay)
    : Optimizer(learning_rate), beta1_(beta1), beta2_(beta2), epsilon_(epsilon), weight_decay_(weight_decay) {
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    throw InvalidArgument(fmt::format("Adam: beta1 {} and beta2 {} must be in [0, 1)", beta1, beta2));
  if (!(epsilon > 0)) throw InvalidArgument(fmt::format("Adam: epsilon {} must be positive", epsilon));
  if (!(weight_decay >= 0)) throw InvalidArgument(fmt::format("Adam: weight decay {} is negative", weight_decay));
}

Adam::State& Adam::state(Parameter& p) {
  State& s = states_[&p];
  if (!fits(s.mean, p) || !fits(s.variance, p)) {
    s.mean = new_state(p, "adam_mean");
    s.variance = new_state(p, "adam_variance");
    s.steps = 0;
    s.device_steps = NDArray();
  }
  return s;
}

void Adam::prepare_one(Parameter& p) { state(p); }

void Adam::capturable_changed(bool on) {
  for (auto& [parameter, s] : states_) {
    if (on) continue;  // made at the next update, from the host's count
    if (s.device_steps.defined() && !s.device_steps.is_closed()) {
      s.steps = std::int64_t(s.device_steps.item<double>());
      s.device_steps.close();
    }
    s.device_steps = NDArray();
  }
}

void Adam::update_one(Parameter& p) {
  State& s = state(p);
  ++s.steps;
  const NDArray& w = p.array();
  ops::AdamHyper h{.learning_rate = learning_rate(),
                   .beta1 = beta1_,
                   .beta2 = beta2_,
                   .epsilon = epsilon_,
                   .weight_decay = weight_decay_,
                   .bias_correction1 = 1,
                   .bias_correction2 = 1};
  NDArray steps;
  if (capturable()) {  // the kernel computes the corrections: Note [Capturable optimizers]
    if (!s.device_steps.defined() || s.device_steps.is_closed() || s.device_steps.device() != w.device()) {
      s.device_steps = w.manager().full({}, double(s.steps - 1), DataType::float64);
      s.device_steps.set_name(p.name() + ".adam_steps");
    }
    s.device_steps.add_(1.0);
    steps = s.device_steps;
  } else {
    const Corrections& c = corrections(s.steps);
    h.bias_correction1 = c.first;
    h.bias_correction2 = c.second;
  }
  ops::adam_update(w, w.gradient(), s.mean, s.variance, h, steps);
}

const Adam::Corrections& Adam::corrections(std::int64_t steps) {
  if (corrections_.steps != steps) {
    const double t = double(steps);
    corrections_ = {steps, 1 - std::pow(beta1_, t), 1 - std::pow(beta2_, t)};
  }
  return corrections_;
}

}  // namespace ndgc::nn
