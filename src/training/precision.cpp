// Mixed precision's names and the float16 loss scaler (ndgc/training.hpp).
//
// Note [Loss scaling]
// float16's smallest normal is 2^-14, and the gradients of a step are often
// smaller: without scaling they flush to zero in the 16-bit backward pass.
// GradScaler's answer, kept here: multiply the loss by a large scale (2^16 to
// start), divide the float32 gradients by it before the update, and let
// overflow tell when the scale is too large: an inf or NaN anywhere skips the
// step and halves the scale; 2,000 clean steps in a row double it. The check
// is one host read per step: the sum over every gradient of g · 0, which is
// NaN exactly when some element is inf or NaN.
#include <cmath>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/scope.hpp"
#include "ndgc/training.hpp"

namespace ndgc::training {

std::string_view to_string(Precision p) noexcept {
  switch (p) {
    case Precision::float32: return "fp32";
    case Precision::bfloat16: return "bf16";
    case Precision::float16: return "fp16";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view name) noexcept {
  for (Precision p : {Precision::float32, Precision::bfloat16, Precision::float16})
    if (to_string(p) == name) return p;
  return std::nullopt;
}

DataType autocast_dtype(Precision p) noexcept {
  switch (p) {
    case Precision::float32: return DataType::float32;
    case Precision::bfloat16: return DataType::bfloat16;
    case Precision::float16: return DataType::float16;
  }
  return DataType::float32;
}

LossScaler::LossScaler(LossScaling options) : options_(options), scale_(options.initial_scale) {
  if (!(options.initial_scale > 0) || !(options.growth > 1) || !(options.backoff > 0 && options.backoff < 1) ||
      options.growth_interval < 1)
    throw InvalidArgument(fmt::format("LossScaler: initial_scale {} must be > 0, growth {} > 1, backoff {} in (0, 1) "
                                      "and growth_interval {} at least 1",
                                      options.initial_scale, options.growth, options.backoff,
                                      options.growth_interval));
}

void LossScaler::update(bool finite) noexcept {
  if (!finite) {
    scale_ *= options_.backoff;
    good_steps_ = 0;
    ++skipped_;
    return;
  }
  if (++good_steps_ == options_.growth_interval) {
    scale_ *= options_.growth;
    good_steps_ = 0;
  }
}

bool LossScaler::unscale_and_update(const NDList& gradients) {
  bool finite = true;
  {
    NDScope scope;  // the check's arrays join the gradients' manager: closed here, it does not grow
    NDArray poison;  // Σ g · 0: NaN when some g is inf or NaN. See Note [Loss scaling].
    for (const NDArray& g : gradients) {
      NDArray unscaled = g;
      unscaled.mul_(1.0 / scale_);
      NDArray zero = g.mul(0.0).sum().to_type(DataType::float64);
      poison = poison.defined() ? poison.add(zero) : zero;
    }
    finite = !poison.defined() || std::isfinite(poison.item<double>());
  }
  update(finite);
  return finite;
}

}  // namespace ndgc::training
