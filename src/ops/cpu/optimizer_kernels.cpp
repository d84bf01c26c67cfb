// CPU kernels for the fused optimizer updates (see Note [Fused optimizer
// updates] in ops/optimizer_update.cpp).
//
// Contiguous float32/float64 views only (parameters, their gradients and the
// optimizer state are all created contiguous); anything else returns false
// and gets the composed update. See Note [One loop per update].
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/cpu/cpu_engine.hpp"

namespace ndgc::ops::cpu {
namespace {

// Note [One loop per update]
// Each update is a single loop that reads every element of the weight, the
// gradient and the state once and writes each once, vectorised by the
// compiler (`omp simd`; this file is built with -fopenmp-simd, which needs no
// OpenMP runtime, and -fno-math-errno, so sqrt is one instruction). Written
// as three Eigen statements per cache-sized block, as before, the same maths
// loaded m and v twice and g twice and ran three loops: about 30 % more
// instructions per element (perf/RESULTS.md, issue 16). Each element sees the
// same operations in the same order as before, so a training run's numbers do
// not change; tests/ops/optimizer_kernels_test.cpp checks the loops against a
// scalar reference at lengths around the vector width.

// Note [No denormal state]
// Adam's and SGD's state decays geometrically where a gradient is zero, as
// it is for a dead ReLU unit or an input pixel that is always 0: m *= 0.9
// and v *= 0.999 every step. Denormal numbers (below numeric_limits<T>::min(),
// 1.2e-38 for float32) then turn up in two places, and x86 processors compute
// each operation that makes or reads one on a slow path:
// - the state itself. A denormal state value never reaches zero, because
//   rounding to nearest turns 0.9 * 4 ulp back into 4 ulp, so it would cost
//   the slow path on every later step. The loops store it as zero instead. A
//   value that small moves its weight by less than 1e-30, so no result that
//   matters changes, and the state stays at an exact zero until a gradient
//   arrives. This is a compare and a mask, not the processor's flush-to-zero
//   mode, so results are the same on every architecture and under valgrind.
// - Adam's step. Written lr/bc1 * m / (...), the product of a learning rate
//   near 1e-3 and a decaying m is denormal for the ~66 steps m takes to fall
//   from 1e-35 to 1e-38. So the loop divides first, m / (sqrt(v/bc2) + eps),
//   whose denominator is below 1 for any gradient below 1, then multiplies by
//   lr/bc1: PyTorch's order, and the composed update's.
// In perf/step_driver at x86-64-v3 the two made the update 2.7 times slower
// than the same loop on normal numbers (87 against 32 microseconds a step;
// perf/RESULTS.md, issue 16). The composed update, which only strided or
// mixed-dtype state takes, keeps denormal state.

template <class T>
inline T flush_denormal(T x) {
  return std::abs(x) < std::numeric_limits<T>::min() ? T(0) : x;
}

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
  T* __restrict w = static_cast<T*>(wv.data);
  const T* __restrict g = static_cast<const T*>(gv.data);
  T* __restrict m = static_cast<T*>(mv.data);
  T* __restrict v = static_cast<T*>(vv.data);
  if (wd != T(0)) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) {
      const T gi = g[i] + wd * w[i];
      const T mi = flush_denormal(b1 * m[i] + c1 * gi);
      const T vi = flush_denormal(b2 * v[i] + c2 * (gi * gi));
      m[i] = mi;
      v[i] = vi;
      w[i] -= mi / (std::sqrt(vi * inv_bc2) + eps) * step;
    }
  } else {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) {
      const T gi = g[i];
      const T mi = flush_denormal(b1 * m[i] + c1 * gi);
      const T vi = flush_denormal(b2 * v[i] + c2 * (gi * gi));
      m[i] = mi;
      v[i] = vi;
      w[i] -= mi / (std::sqrt(vi * inv_bc2) + eps) * step;
    }
  }
}

template <class T>
void sgd(const TensorView& wv, const TensorView& gv, const TensorView& mv, const SgdHyper& h) {
  const std::int64_t n = wv.size();
  const T lr = T(h.learning_rate), mu = T(h.momentum), wd = T(h.weight_decay);
  T* __restrict w = static_cast<T*>(wv.data);
  const T* __restrict g = static_cast<const T*>(gv.data);
  T* __restrict m = static_cast<T*>(mv.data);
  // The four cases apart, so that a zero weight decay adds no `0 * w` term
  // (which would turn an infinite weight into NaN).
  if (m && wd != T(0)) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) {
      const T mi = flush_denormal(mu * m[i] + g[i] + wd * w[i]);
      m[i] = mi;
      w[i] -= lr * mi;
    }
  } else if (m) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) {
      const T mi = flush_denormal(mu * m[i] + g[i]);
      m[i] = mi;
      w[i] -= lr * mi;
    }
  } else if (wd != T(0)) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) w[i] -= lr * (g[i] + wd * w[i]);
  } else {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) w[i] -= lr * g[i];
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
