// CPU kernels for the fused optimizer updates (see Note [Fused optimizer
// updates] in ops/optimizer_update.cpp).
//
// Contiguous float32/float64 views only (parameters, their gradients and the
// optimizer state are all created contiguous); anything else returns false
// and gets the composed update. The parameter is processed in blocks of
// kBlock elements: each block's m, v and w statements run while its data is
// in L1, so the whole update is one pass over memory. Vectorised by Eigen.
#include <Eigen/Core>

#include "ops/cpu/cpu_engine.hpp"

namespace ndgc::ops::cpu {
namespace {

constexpr std::int64_t kBlock = 2048;

template <class T>
using Vec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using CVec = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

bool fusable(std::initializer_list<const TensorView*> views) {
  const DataType t = (*views.begin())->dtype;
  if (!is_floating(t)) return false;
  for (const TensorView* v : views)
    if (v->dtype != t || !v->is_contiguous()) return false;
  return true;
}

template <class T>
void adam(const TensorView& wv, const TensorView& gv, const TensorView& mv, const TensorView& vv,
          const AdamHyper& h) {
  const std::int64_t n = wv.size();
  const T b1 = T(h.beta1), b2 = T(h.beta2), c1 = T(1 - h.beta1), c2 = T(1 - h.beta2), wd = T(h.weight_decay);
  const T step = T(h.learning_rate / h.bias_correction1), eps = T(h.epsilon);
  const T inv_bc2 = T(1 / h.bias_correction2);
  T* w = static_cast<T*>(wv.data);
  const T* g = static_cast<const T*>(gv.data);
  T* m = static_cast<T*>(mv.data);
  T* v = static_cast<T*>(vv.data);
  for (std::int64_t i = 0; i < n; i += kBlock) {
    const std::int64_t len = std::min(kBlock, n - i);
    Vec<T> W(w + i, len), M(m + i, len), V(v + i, len);
    CVec<T> G(g + i, len);
    if (wd != T(0)) {
      M = b1 * M + c1 * (G + wd * W);
      V = b2 * V + c2 * (G + wd * W).square();
    } else {
      M = b1 * M + c1 * G;
      V = b2 * V + c2 * G.square();
    }
    W -= step * M / ((V * inv_bc2).sqrt() + eps);
  }
}

template <class T>
void sgd(const TensorView& wv, const TensorView& gv, const TensorView& mv, const SgdHyper& h) {
  const std::int64_t n = wv.size();
  const T lr = T(h.learning_rate), mu = T(h.momentum), wd = T(h.weight_decay);
  T* w = static_cast<T*>(wv.data);
  const T* g = static_cast<const T*>(gv.data);
  T* m = static_cast<T*>(mv.data);
  for (std::int64_t i = 0; i < n; i += kBlock) {
    const std::int64_t len = std::min(kBlock, n - i);
    Vec<T> W(w + i, len);
    CVec<T> G(g + i, len);
    if (m) {
      Vec<T> M(m + i, len);
      if (wd != T(0)) M = mu * M + G + wd * W;
      else M = mu * M + G;
      W -= lr * M;
    } else if (wd != T(0)) {
      W -= lr * (G + wd * W);
    } else {
      W -= lr * G;
    }
  }
}

}  // namespace

bool CpuEngine::adam_update(const TensorView& weight, const TensorView& grad, const TensorView& mean,
                            const TensorView& variance, const AdamHyper& hyper) {
  if (!fusable({&weight, &grad, &mean, &variance})) return false;
  if (weight.dtype == DataType::float32) adam<float>(weight, grad, mean, variance, hyper);
  else adam<double>(weight, grad, mean, variance, hyper);
  return true;
}

bool CpuEngine::sgd_update(const TensorView& weight, const TensorView& grad, const TensorView& momentum,
                           const SgdHyper& hyper) {
  if (!fusable({&weight, &grad}) || (momentum.data && !fusable({&weight, &momentum}))) return false;
  if (weight.dtype == DataType::float32) sgd<float>(weight, grad, momentum, hyper);
  else sgd<double>(weight, grad, momentum, hyper);
  return true;
}

}  // namespace ndgc::ops::cpu
