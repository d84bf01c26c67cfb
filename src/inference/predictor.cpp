// The non-template part of Predictor: its manager under the model's, the
// per-call context managers and the forward pass. See ndgc/inference.hpp.
// Thread-safety: new_context() and forward() may run on several threads.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/inference.hpp"

namespace ndgc::inference {
namespace detail {

PredictorCore::PredictorCore(Model& model) : model_(model) {
  if (!model_.block().is_initialized())
    throw InvalidArgument(fmt::format(
        "Predictor: model '{}' is not initialized; call model.initialize(input_shape) or model.load(file) first",
        model_.name()));
  manager_ = model_.manager().new_sub_manager("predictor");
}

PredictorCore::~PredictorCore() = default;

NDManager PredictorCore::new_context() { return manager_.new_sub_manager("predict"); }

NDList PredictorCore::forward(const ManagerRef& context, const NDList& inputs) {
  const Device device = model_.manager().device();
  for (const NDArray& a : inputs)
    if (a.device() != device) {
      NDList moved = inputs.to_device(device);
      for (std::size_t i = 0; i < moved.size(); ++i)
        if (!moved[i].same(inputs[i])) moved[i].attach(context);
      return model_.block().forward(moved, /*training=*/false);
    }
  return model_.block().forward(inputs, /*training=*/false);
}

}  // namespace detail

void throw_null_translator() { throw InvalidArgument("Predictor: the translator is null"); }

}  // namespace ndgc::inference
