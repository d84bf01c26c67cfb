// Batched products whose right operand every batch shares, as one product.
//
//   ops::batched_matmul(engine, a, b, out);   // a [B..., m, k], b [B..., k, n] (stride 0 on B...), out [B..., m, n]
//
// Note [Stacked rows]
// ONNX exporters write a sequence model's projections as MatMul of
// x [T, N, d] by a weight [d, e]: T batches of N rows, each by the same
// matrix. Run batch by batch, that is T products of N rows: at batch 1,
// T matrix-vector products, each reading the whole weight again. When every batch shares
// b (stride 0 on each batch axis) and a's and out's batch axes step over
// whole rows, the rows stack into one matrix [B·m, k] and the product is
// one GEMM, as LibTorch runs it. The same holds for the weight's gradient:
// dW = Σ_batches a_bᵀ g_b is the one product of the stacked rows,
// a_stackedᵀ × g_stacked, with no [B, k, n] scratch to sum. Whether the rows
// stack depends on shapes and strides alone, never on the thread count, so
// the same-bits rule holds.
#pragma once

#include <optional>

#include "ops/engine.hpp"

namespace ndgc::ops {

// v [B..., rows, cols] as one matrix [B·rows, cols] when its batch axes step
// over whole rows (each axis's stride is the row stride times the rows
// inside it; axes of length 1 anywhere); nullopt otherwise (a broadcast or
// permuted batch axis).
std::optional<TensorView> stacked_rows(const TensorView& v) noexcept;

// e.matmul(a, b, out) for views of one rank (batch axes broadcast already),
// as one product of the stacked rows where every batch shares b (Note
// [Stacked rows]).
void batched_matmul(Engine& e, const TensorView& a, const TensorView& b, const TensorView& out);

}  // namespace ndgc::ops
