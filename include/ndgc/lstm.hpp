// The LSTM of issue 27, as PyTorch computes it: gate blocks of H columns in
// the order i, f, g, o; i, f, o sigmoid, g tanh; c' = f c + i g, h' = o tanh(c').
//
//   // x [B, T, F]; per layer l: weight_ih [F_l, 4H], weight_hh [H, 4H], bias [4H]
//   NDList out = lstm(x, {w_ih0, w_hh0, b0, w_ih1, w_hh1, b1});    // 2 layers, zero initial state
//   NDArray y = out[0], h = out[1], c = out[2];                    // [B, T, H], [L, B, H], [L, B, H]
//
// Both record on the tape, with a gradient for every floating input; inputs
// are float32 or float64 and may be views. Outputs join x's (input_gates')
// manager; a call that fails its checks leaves no array behind.
#pragma once

#include "ndgc/ndarray.hpp"
#include "ndgc/ndlist.hpp"

namespace ndgc {

// One fused step: input_gates, hidden_gates [B, 4H] (their sum is the gates'
// pre-activations: x_t W_ih + b and h W_hh), c [B, H] → [2, B, H] holding
// {h', c'}; out.get(0) and out.get(1) are the two states.
// See Note [One output for two states] in src/ops/lstm_cell.cpp.
NDArray lstm_cell(const NDArray& input_gates, const NDArray& hidden_gates, const NDArray& c,
                  Site site = Site::current());

// A multi-layer LSTM over x [B, T, F]. `weights` holds, for each of the L
// layers in turn, weight_ih [F_l, 4H] (F_0 = F, F_l = H after), weight_hh
// [H, 4H] and bias [4H]; h0 and c0 [L, B, H], each NDArray{} for zeros.
// Returns {y [B, T, H] (the last layer's h at every step), h [L, B, H],
// c [L, B, H] (every layer's state after the last step)}. Per layer one GEMM
// projects every step's input, then each step is one [B, H] x [H, 4H] GEMM
// and one fused lstm_cell.
NDList lstm(const NDArray& x, const NDList& weights, const NDArray& h0 = NDArray{}, const NDArray& c0 = NDArray{},
            Site site = Site::current());

}  // namespace ndgc
