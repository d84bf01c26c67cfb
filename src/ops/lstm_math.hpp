// One unit of the fused LSTM cell, forward and backward: the CUDA kernel
// (gpu/lstm_kernels.cu) runs these per unit, and tests/ops/lstm_math_test.cpp
// runs on the host the code a GPU would run. The CPU engine
// (ops/cpu/lstm_kernels.cpp) computes the same maths in the same order over
// runs of units with Eigen's vectorised logistic and tanh (Note [Vectorised
// gates] there); kGates is shared.
//
// PyTorch's arithmetic. The pre-activations of unit j are
// a_k = input_gates[k H + j] + hidden_gates[k H + j] for the gate blocks
// k = i, f, g, o; then i, f, o = sigmoid(a), g = tanh(a),
// c' = f c + i g, h' = o tanh(c').
// The backward pass recomputes the gates from the pre-activations (nothing is
// kept between the passes) and, given dh' and dc' (the gradient that reaches
// c' directly, through the next step), returns d a_k and dc:
//   dc* = dc' + dh' o (1 - tanh²(c')),
//   d a_i = dc* g i (1 - i), d a_f = dc* c f (1 - f), d a_g = dc* i (1 - g²),
//   d a_o = dh' tanh(c') o (1 - o), dc = dc* f.
#pragma once

#include <cmath>
#include <cstdint>

#include "ops/host_device.hpp"

namespace ndgc::ops::lstm {

inline constexpr int kGates = 4;  // i, f, g, o, each a block of H columns

template <class T>
NDGC_HD inline T sigmoid(T x) {
  using std::exp;
  return T(1) / (T(1) + exp(-x));
}

// The four pre-activations of one unit.
template <class T>
struct Gates {
  T i, f, g, o;
};

// Unit j of a row whose gate blocks start at `input_gates` and `hidden_gates`.
template <class T>
NDGC_HD inline Gates<T> pre_activations(const T* input_gates, const T* hidden_gates, std::int64_t hidden,
                                        std::int64_t j) {
  return {input_gates[j] + hidden_gates[j], input_gates[hidden + j] + hidden_gates[hidden + j],
          input_gates[2 * hidden + j] + hidden_gates[2 * hidden + j],
          input_gates[3 * hidden + j] + hidden_gates[3 * hidden + j]};
}

template <class T>
NDGC_HD inline void cell_forward(const Gates<T>& a, T c, T& h_out, T& c_out) {
  using std::tanh;
  const T i = sigmoid(a.i), f = sigmoid(a.f), g = tanh(a.g), o = sigmoid(a.o);
  c_out = f * c + i * g;
  h_out = o * tanh(c_out);
}

// Returns the pre-activations' gradient; `dc` gets the gradient of the previous cell state.
template <class T>
NDGC_HD inline Gates<T> cell_backward(const Gates<T>& a, T c, T dh, T dc_next, T& dc) {
  using std::tanh;
  const T i = sigmoid(a.i), f = sigmoid(a.f), g = tanh(a.g), o = sigmoid(a.o);
  const T tc = tanh(f * c + i * g);
  const T dcell = dc_next + dh * o * (T(1) - tc * tc);
  dc = dcell * f;
  return {dcell * g * i * (T(1) - i), dcell * c * f * (T(1) - f), dcell * i * (T(1) - g * g),
          dh * tc * o * (T(1) - o)};
}

}  // namespace ndgc::ops::lstm
