// Parameter: a named array that requires a gradient (unless it is a running
// statistic), created by its block's
// initialize() in the manager the caller chose (the model's).
// Thread-safety: initialize/set_array are not synchronised; array() and
// gradient() may be called from any thread once initialized.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/nn.hpp"

namespace ndgc::nn {

const NDArray& Parameter::array() const {
  if (!array_.defined())
    throw InvalidArgument(fmt::format(
        "Parameter '{}' is not initialized; call initialize(manager, input_shape) on its block (or load a "
        "model file) first",
        name_));
  return array_;
}

NDArray Parameter::gradient() const { return array().gradient(); }

void Parameter::initialize(const ManagerRef& manager, const Shape& shape, DataType dtype,
                           const Initializer& fallback) {
  if (array_.defined())
    throw InvalidArgument(fmt::format("Parameter '{}' is already initialized ({})", name_, array_.shape().to_string()));
  NDArray a = manager.zeros(shape, dtype);
  a.set_name(name_);
  if (initializer_) initializer_->initialize(a);
  else fallback.initialize(a);
  if (trainable()) a.set_requires_gradient(true);
  array_ = std::move(a);
}

void Parameter::set_array(NDArray array) {
  if (trainable() && !array.requires_gradient()) array.set_requires_gradient(true);
  array_ = std::move(array);
}

}  // namespace ndgc::nn
