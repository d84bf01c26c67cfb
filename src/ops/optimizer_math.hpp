// One element of the fused optimizer updates, shared by the CPU engine's
// loops (ops/cpu/optimizer_kernels.cpp) and the CUDA kernels
// (gpu/optimizer_kernels.cu): both devices compute the same maths in the same
// order, and the host tests (tests/ops/optimizer_kernels_test.cpp) check the
// code the GPU runs. The formulas are AdamHyper's and SgdHyper's
// (ops/engine.hpp), with Note [No denormal state].
#pragma once

#include <cmath>
#include <limits>

#include "ops/engine.hpp"
#include "ops/host_device.hpp"

namespace ndgc::ops::update {

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
//   mode, so results are the same on every architecture and under valgrind,
//   and on the GPU, which has no slow path but keeps the same state.
// - Adam's step. Written lr/bc1 * m / (...), the product of a learning rate
//   near 1e-3 and a decaying m is denormal for the ~66 steps m takes to fall
//   from 1e-35 to 1e-38. So the loop divides first, m / (sqrt(v)/sqrt(bc2) + eps),
//   whose denominator is below 1 for any gradient below 1, then multiplies by
//   lr/bc1: PyTorch's order, and the composed update's.
// In perf/step_driver at x86-64-v3 the two made the update 2.7 times slower
// than the same loop on normal numbers (87 against 32 microseconds a step;
// perf/RESULTS.md, issue 16). The composed update, which only strided or
// mixed-dtype state takes, keeps denormal state.

template <class T>
NDGC_HD inline T flush_denormal(T x) {
  using std::fabs;  // fabs: one mask instruction in a vector loop
  return fabs(x) < std::numeric_limits<T>::min() ? T(0) : x;
}

// The same for a value that cannot be negative (Adam's v, a sum of squares
// scaled by 1 - β2 > 0): no fabs, one instruction fewer per vector, about
// 14 k of a demo step's 2.4 M (perf/RESULTS.md, issue 41). A NaN stays NaN.
template <class T>
NDGC_HD inline T flush_denormal_nonnegative(T x) {
  return x < std::numeric_limits<T>::min() ? T(0) : x;
}

// Adam's hyper-parameters in the element type; a plain struct, so it is a
// kernel launch parameter as it is.
template <class T>
struct AdamConstants {
  T b1, b2, c1, c2, wd, step, eps, inv_sqrt_bc2;
};

template <class T>
AdamConstants<T> adam_constants(const AdamHyper& h) {
  return {T(h.beta1),        T(h.beta2),
          T(1 - h.beta1),    T(1 - h.beta2),
          T(h.weight_decay), T(h.learning_rate / h.bias_correction1),
          T(h.epsilon),      T(1 / std::sqrt(h.bias_correction2))};
}

// A step count in device memory (AdamHyper::steps; Note [Capturable
// optimizers] in nn/optimizer.cpp): the kernel makes the two bias-corrected
// constants from it where it runs, with adam_constants' formula in double.
struct AdamSteps {
  const double* steps;
  double learning_rate, beta1, beta2;
};

inline AdamSteps adam_steps(const AdamHyper& h) { return {h.steps, h.learning_rate, h.beta1, h.beta2}; }

template <class T>
NDGC_HD inline void apply_steps(AdamConstants<T>& k, const AdamSteps& s) {
  using std::pow;
  using std::sqrt;
  const double t = *s.steps;
  k.step = T(s.learning_rate / (1 - pow(s.beta1, t)));
  k.inv_sqrt_bc2 = T(1 / sqrt(1 - pow(s.beta2, t)));
}

// g' = g + wd·w when `decay` (a zero decay adds no 0·w term, which would turn
// an infinite weight into NaN); m = β1·m + (1-β1)·g'; v = β2·v + (1-β2)·g'²;
// w -= m / (sqrt(v) / sqrt(bc2) + ε) · lr / bc1, the square root first, as
// PyTorch's Adam takes it; the division by sqrt(bc2) is a product by its
// inverse, which the compiler fuses with + ε (one instruction fewer per
// vector than sqrt(v / bc2) + ε; perf/RESULTS.md, issue 41).
template <class T>
NDGC_HD inline void adam_step(T& w, T g, T& m, T& v, const AdamConstants<T>& k, bool decay) {
  using std::sqrt;
  if (decay) g = g + k.wd * w;
  const T mi = flush_denormal(k.b1 * m + k.c1 * g);
  const T vi = flush_denormal_nonnegative(k.b2 * v + k.c2 * (g * g));
  m = mi;
  v = vi;
  w -= mi / (sqrt(vi) * k.inv_sqrt_bc2 + k.eps) * k.step;
}

// g' as for Adam; with momentum (m not null) m = μ·m + g', w -= lr·m;
// without, w -= lr·g'.
template <class T>
NDGC_HD inline void sgd_step(T& w, T g, T* m, T lr, T mu, T wd, bool decay) {
  if (decay) g = g + wd * w;
  if (m) {
    *m = flush_denormal(mu * *m + g);
    g = *m;
  }
  w -= lr * g;
}

}  // namespace ndgc::ops::update
