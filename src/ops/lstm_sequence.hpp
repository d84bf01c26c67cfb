// The layout of one LSTM layer's whole sequence, shared by its forward op
// (ops/lstm.cpp, lstm_layer) and its gradient rule (autograd/layer_rules.cpp).
//
// Note [One array for a layer's sequence]
// A layer runs as one recorded op whose output is a [T, 6, B, H] array: for
// step t, rows 0 and 1 are h_t and c_t, and rows 2 to 5, read as one
// contiguous [B, 4H] matrix, are the step's hidden gates h_{t-1} W_hh (the
// forward pass keeps them for the backward pass, which would otherwise redo
// the step's GEMM). So:
//   - state(t), rows 0 and 1, is the contiguous [2, B, H] that the fused
//     lstm_cell kernel writes (Note [One output for two states] in
//     ops/lstm_cell.cpp): the cell kernels run unchanged, on every engine;
//   - h(t - 1) and c(t - 1) are contiguous [B, H] inputs of step t;
//   - the gradient of the output has the same layout, and the backward pass
//     adds each step's carried dh and dc into rows 0 and 1 of step t - 1 and
//     writes the step's gate gradient over rows 2 to 5 of step t.
// Without an initial state, step 0's hidden gates are zeros, and its c_{-1}
// is read from the first B·H of those zeros: no separate zero array.
// The hidden-gate rows are the op's own: lstm() hands out views of rows 0
// and 1 only, so the gradient reaching rows 2 to 5 is always zero and the
// backward pass overwrites it.
#pragma once

#include <cstdint>

#include "ops/engine.hpp"

namespace ndgc::ops::lstm {

inline constexpr std::int64_t kSequenceRows = 6;  // h, c, then the 4 gate blocks of h_{t-1} W_hh

struct Sequence {
  std::int64_t batch, steps, hidden;

  Shape shape() const { return Shape{steps, kSequenceRows, batch, hidden}; }
  // Rows [first, first + count) of step t of a contiguous sequence-shaped view, as a contiguous block.
  TensorView rows(const TensorView& seq, std::int64_t t, std::int64_t first, std::int64_t count) const noexcept {
    TensorView v = seq;
    v.data = element(seq, (t * kSequenceRows + first) * batch * hidden);
    v.rank = 3;
    v.shape[0] = count, v.shape[1] = batch, v.shape[2] = hidden;
    v.strides[0] = batch * hidden, v.strides[1] = hidden, v.strides[2] = 1;
    return v;
  }
  TensorView state(const TensorView& seq, std::int64_t t) const noexcept { return rows(seq, t, 0, 2); }
  TensorView h(const TensorView& seq, std::int64_t t) const noexcept { return matrix(rows(seq, t, 0, 1), hidden); }
  TensorView c(const TensorView& seq, std::int64_t t) const noexcept { return matrix(rows(seq, t, 1, 1), hidden); }
  // Step t's hidden gates h_{t-1} W_hh, [B, 4H].
  TensorView hidden_gates(const TensorView& seq, std::int64_t t) const noexcept {
    return matrix(rows(seq, t, 2, 4), 4 * hidden);
  }
  // Step t's input gates x_t W_ih + b: the [B, 4H] slice t of a [B, T, 4H] projection view.
  TensorView input_gates(const TensorView& projection, std::int64_t t) const noexcept {
    TensorView v = projection;
    v.data = element(projection, t * projection.strides[1]);
    v.rank = 2;
    v.shape[0] = batch, v.shape[1] = 4 * hidden;
    v.strides[0] = projection.strides[0], v.strides[1] = projection.strides[2];
    return v;
  }
  // The first B·H elements of a [B, 4H] block as a contiguous [B, H]: step
  // 0's c_{-1} when its hidden gates are zeros.
  TensorView leading_state(const TensorView& gates) const noexcept { return matrix(gates, hidden); }
  // Row `row` (0: h, 1: c) of a [2, B, H] initial state, [B, H].
  TensorView initial(const TensorView& state0, std::int64_t row) const noexcept {
    TensorView v = state0;
    v.data = element(state0, row * state0.strides[0]);
    v.rank = 2;
    v.shape[0] = batch, v.shape[1] = hidden;
    v.strides[0] = state0.strides[1], v.strides[1] = state0.strides[2];
    return v;
  }

 private:
  // The address `offset` elements past v's first.
  static void* element(const TensorView& v, std::int64_t offset) noexcept {
    return static_cast<char*>(v.data) + std::int64_t(size_of(v.dtype)) * offset;
  }
  // A contiguous block of B rows of `cols` elements.
  TensorView matrix(TensorView v, std::int64_t cols) const noexcept {
    v.rank = 2;
    v.shape[0] = batch, v.shape[1] = cols;
    v.strides[0] = cols, v.strides[1] = 1;
    return v;
  }
};

}  // namespace ndgc::ops::lstm
