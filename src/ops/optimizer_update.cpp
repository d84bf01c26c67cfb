// Fused optimizer updates: validation, and the composed fallback for engines
// without a fused kernel.
//
// Note [Fused optimizer updates]
// An Adam step written as in-place ops (m.sub_(g).mul_(b1).add_(g), g², v's
// three passes, sqrt, +ε, m/·, ·lr, w.sub_(·)) streams the parameter, its
// gradient and two state arrays through memory about a dozen times and makes
// temporaries; for the 109k-parameter MLP of perf/ that alone costs about as
// much as its forward pass. So an update is one engine call: the CPU engine
// and the CUDA engine each do it in one pass, with one element's maths from
// ops/optimizer_math.hpp.
// An engine without such a kernel (or views it does not handle) gets the
// same maths composed from its primitives here, with one or two scratch
// buffers.
#include "ops/optimizer_update.hpp"

#include <cmath>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ops/op_support.hpp"

namespace ndgc::ops {
namespace {

// A contiguous scratch buffer like the weight.
struct Temp {
  std::unique_ptr<ArrayImpl> impl;
  explicit Temp(const ArrayImpl& like) : impl(new_output(like.shape, like.dtype, like.device, Site::current())) {}
  TensorView view() const { return view_of(*impl); }
};

Pinned pin_like(const char* op, const char* what, const NDArray& array, const ArrayImpl& weight) {
  Pinned a(array, op);
  if (!(a->shape == weight.shape))
    throw ShapeMismatch(fmt::format("{}: the {} {} does not have the shape of the weight {}", op, what,
                                    describe(*a), describe(weight)));
  check_same_dtype(op, weight, *a);
  check_same_device(op, weight, *a);
  return a;
}

Pinned pin_weight(const char* op, const NDArray& weight) {
  Pinned w(weight, op);
  check_floating(op, *w);
  check_writable(op, *w);
  return w;
}

// g + wd·w in `temp`, or g itself when wd is 0.
TensorView decayed(Engine& e, const ArrayImpl& w, const TensorView& g, double wd, std::unique_ptr<Temp>& temp) {
  if (wd == 0) return g;
  temp = std::make_unique<Temp>(w);
  e.binary_scalar(Binary::mul, view_of(w), wd, false, temp->view());
  e.binary(Binary::add, temp->view(), g, temp->view());
  return temp->view();
}

}  // namespace

void adam_update(const NDArray& weight, const NDArray& grad, const NDArray& mean, const NDArray& variance,
                 const AdamHyper& hyper, const NDArray& steps) {
  detail::enter();
  const char* op = "adam_update";
  Pinned w = pin_weight(op, weight);
  Pinned g = pin_like(op, "gradient", grad, *w), m = pin_like(op, "mean", mean, *w),
         v = pin_like(op, "variance", variance, *w);
  check_writable(op, *m);
  check_writable(op, *v);
  AdamHyper h = hyper;
  std::optional<Pinned> count;
  if (steps.defined()) {
    count.emplace(steps, op);
    if (!((*count)->shape == Shape{}) || (*count)->dtype != DataType::float64)
      throw InvalidArgument(fmt::format("{}: the step count {} must be a 0-d float64 array", op, describe(**count)));
    check_same_device(op, *w, **count);
    h.steps = static_cast<const double*>(view_of(**count).data);
  }
  if (w->size() == 0) return;
  Engine& e = engine(w->device);
  const TensorView wv = view_of(*w), mv = view_of(*m), vv = view_of(*v);
  if (e.adam_update(wv, view_of(*g), mv, vv, h)) return;
  if (h.steps)  // the composed maths below takes its bias corrections from the host
    throw InvalidArgument(fmt::format("{}: a step count in device memory needs contiguous weight, gradient and state "
                                      "of one floating dtype (the fused kernel); {} has other views",
                                      op, describe(*w)));
  std::unique_ptr<Temp> gd;
  const TensorView gv = decayed(e, *w, view_of(*g), h.weight_decay, gd);
  e.binary(Binary::sub, mv, gv, mv);  // m = β1·(m - g') + g'
  e.binary_scalar(Binary::mul, mv, h.beta1, false, mv);
  e.binary(Binary::add, mv, gv, mv);
  Temp t(*w);
  e.unary(Unary::square, gv, t.view());
  e.binary(Binary::sub, vv, t.view(), vv);  // v = β2·(v - g'²) + g'²
  e.binary_scalar(Binary::mul, vv, h.beta2, false, vv);
  e.binary(Binary::add, vv, t.view(), vv);
  e.unary(Unary::sqrt, vv, t.view());  // sqrt(v) / sqrt(bc2) + ε
  e.binary_scalar(Binary::div, t.view(), std::sqrt(h.bias_correction2), false, t.view());
  e.binary_scalar(Binary::add, t.view(), h.epsilon, false, t.view());
  e.binary(Binary::div, mv, t.view(), t.view());
  e.binary_scalar(Binary::mul, t.view(), h.learning_rate / h.bias_correction1, false, t.view());
  e.binary(Binary::sub, wv, t.view(), wv);
}

void sgd_update(const NDArray& weight, const NDArray& grad, const NDArray& momentum, const SgdHyper& h) {
  detail::enter();
  const char* op = "sgd_update";
  Pinned w = pin_weight(op, weight);
  Pinned g = pin_like(op, "gradient", grad, *w);
  std::optional<Pinned> mom;
  if (momentum.defined()) {
    mom.emplace(pin_like(op, "momentum", momentum, *w));
    check_writable(op, **mom);
  }
  if (w->size() == 0) return;
  Engine& e = engine(w->device);
  const TensorView wv = view_of(*w);
  const TensorView mv = mom ? view_of(**mom) : TensorView{};
  if (e.sgd_update(wv, view_of(*g), mv, h)) return;
  std::unique_ptr<Temp> gd;
  const TensorView gv = decayed(e, *w, view_of(*g), h.weight_decay, gd);
  Temp step(*w);
  if (mom) {
    e.binary_scalar(Binary::mul, mv, h.momentum, false, mv);
    e.binary(Binary::add, mv, gv, mv);
    e.binary_scalar(Binary::mul, mv, h.learning_rate, false, step.view());
  } else {
    e.binary_scalar(Binary::mul, gv, h.learning_rate, false, step.view());
  }
  e.binary(Binary::sub, wv, step.view(), wv);
}

}  // namespace ndgc::ops
