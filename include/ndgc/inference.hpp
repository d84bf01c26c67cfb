// Inference: Translator and Predictor (DJL's), on a per-call context manager.
//
//   struct Classify : inference::Translator<std::vector<float>, int> {
//     NDList process_input(const ManagerRef& ctx, const std::vector<float>& pixels) override {
//       return NDList{ctx.create(pixels, Shape{1, 784})};          // in the context
//     }
//     int process_output(const ManagerRef&, const NDList& out) override {
//       return int(out.head().argmax().item<std::int64_t>());     // plain data out
//     }
//   };
//   inference::Predictor<std::vector<float>, int> predictor(model, std::make_shared<Classify>());
//   int label = predictor.predict(pixels);
//
// Managers follow DJL's tree (docs/design.md §4): the predictor's manager is a
// sub-manager of the model's, and each predict() call gets a context
// manager, a sub-manager of the predictor's, closed when the call returns.
// The forward pass starts from the translator's inputs, so its results join
// the context too: a translator that creates its arrays in the context and
// returns plain data leaks nothing, however many calls are made. (A result
// that must outlive the call is the translator's to move out, e.g. with
// ctx.ret() to the predictor's manager, which then keeps it until the
// predictor ends.) predict() never records: it pauses any GradientCollector
// of the calling thread. Devices: the context is on the model's device, so a
// translator that creates its inputs in it creates them there; inputs it
// made elsewhere are copied to the model's device (into the context) before
// the forward pass, and the outputs are on the model's device.
//
// Thread-safety: predict() may be called from several threads at once on one
// predictor (each call has its own context; parameters are only read) as
// long as the translator's methods are thread-safe too. The model must
// outlive its predictors.
#pragma once

#include <memory>
#include <utility>

#include "ndgc/autograd.hpp"
#include "ndgc/manager.hpp"
#include "ndgc/model.hpp"
#include "ndgc/ndlist.hpp"

namespace ndgc::inference {

template <class In, class Out>
class Translator {
 public:
  virtual ~Translator() = default;
  // The model's inputs for `input`, created in `context`.
  virtual NDList process_input(const ManagerRef& context, const In& input) = 0;
  // The result from the model's outputs (which live in `context`).
  virtual Out process_output(const ManagerRef& context, const NDList& output) = 0;
};

namespace detail {

// The non-template part of a Predictor: its managers and the forward pass.
class PredictorCore {
 public:
  explicit PredictorCore(Model& model);
  ~PredictorCore();
  PredictorCore(const PredictorCore&) = delete;
  PredictorCore& operator=(const PredictorCore&) = delete;
  ManagerRef manager() const noexcept { return manager_; }
  Model& model() noexcept { return model_; }
  // A new context manager for one call.
  [[nodiscard]] NDManager new_context();
  // The block's forward pass on the model's device: inputs elsewhere (a
  // translator that made host arrays for a model on a GPU) are copied there
  // first, the copies attached to `context` so they close with the call.
  NDList forward(const ManagerRef& context, const NDList& inputs);

 private:
  Model& model_;
  NDManager manager_;
};

}  // namespace detail

template <class In, class Out>
class Predictor {
 public:
  // InvalidArgument when the model is not initialized or the translator is null.
  Predictor(Model& model, std::shared_ptr<Translator<In, Out>> translator)
      : core_(model), translator_(std::move(translator)) {
    check_translator(translator_ != nullptr);
  }

  Out predict(const In& input) {
    autograd::NoGradient pause;
    NDManager context = core_.new_context();
    NDList inputs = translator_->process_input(context, input);
    NDList outputs = core_.forward(context, inputs);
    return translator_->process_output(context, outputs);
  }  // the context closes here, after the result is built

  ManagerRef manager() const noexcept { return core_.manager(); }
  Model& model() noexcept { return core_.model(); }

 private:
  static void check_translator(bool present);
  detail::PredictorCore core_;
  std::shared_ptr<Translator<In, Out>> translator_;
};

void throw_null_translator();

template <class In, class Out>
void Predictor<In, Out>::check_translator(bool present) {
  if (!present) throw_null_translator();
}

}  // namespace ndgc::inference
