// Fused, in-place optimizer updates: the ops behind nn::Adam and nn::Sgd.
//
//   ops::adam_update(w, w.gradient(), m, v, {.learning_rate = 1e-3, ...});
//
// Each call validates its arrays (same shape, dtype and device; floating;
// writable), pins them and runs one engine call: on the CPU a single pass
// over the parameter instead of the dozen passes (and temporaries) the same
// maths takes as separate in-place ops. Like every in-place op they are not
// recorded by autograd. Private to the library (the nn layer uses them).
// Thread-safety: as in-place ops: concurrent updates of one array race.
#pragma once

#include "ndgc/ndarray.hpp"
#include "ops/engine.hpp"

namespace ndgc::ops {

// `steps`, when given, is a 0-d float64 array on the weight's device holding
// the step count t, from which the kernel computes the bias corrections
// (hyper's are ignored): Note [Capturable optimizers] in nn/optimizer.cpp.
void adam_update(const NDArray& weight, const NDArray& grad, const NDArray& mean, const NDArray& variance,
                 const AdamHyper& hyper, const NDArray& steps = NDArray());
// `momentum` may be an empty handle (plain SGD).
void sgd_update(const NDArray& weight, const NDArray& grad, const NDArray& momentum, const SgdHyper& hyper);

}  // namespace ndgc::ops
