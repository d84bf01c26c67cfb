// CUDA kernels of the fused LSTM cell, forward and backward. Twin of
// src/ops/cpu/lstm_kernels.cpp: one thread per unit (row b, column j), each
// running ops/lstm_math.hpp's NDGC_HD maths, the CPU loop's own, on its
// four pre-activations and cell state. Units are independent: no reduction,
// no atomics. Gate and state rows may be strided (the engine has made each
// view's last axis contiguous); out and g are contiguous [2, B, H].
#include "kernels.hpp"
#include "launch.cuh"
#include "ops/first_axis.hpp"
#include "ops/lstm_math.hpp"

namespace ndgc::cuda::kernels {
namespace {

using ops::FirstAxis;  // input_gates, hidden_gates and c read row by row, by value for a launch

template <class T>
__global__ void lstm_cell_kernel(FirstAxis<T> ig, FirstAxis<T> hg, FirstAxis<T> c, std::int64_t batch, std::int64_t hidden,
                                 T* out) {
  const std::int64_t total = batch * hidden;
  for (std::int64_t e = global_index(); e < total; e += grid_stride()) {
    const std::int64_t b = e / hidden, j = e % hidden;
    ops::lstm::cell_forward(ops::lstm::pre_activations(ig.row(b), hg.row(b), hidden, j), c.row(b)[j], out[e],
                            out[total + e]);
  }
}

// g = {dh', dc'} [2, B, H]; d_input_gates and d_hidden_gates [B, 4H] get the
// same values; dc [B, H]. Null outputs are not wanted.
template <class T>
__global__ void lstm_cell_backward_kernel(FirstAxis<T> ig, FirstAxis<T> hg, FirstAxis<T> c, const T* g, std::int64_t batch,
                                          std::int64_t hidden, T* dx, T* dh, T* dc) {
  const std::int64_t total = batch * hidden;
  for (std::int64_t e = global_index(); e < total; e += grid_stride()) {
    const std::int64_t b = e / hidden, j = e % hidden;
    T dprev;
    const ops::lstm::Gates<T> d = ops::lstm::cell_backward(ops::lstm::pre_activations(ig.row(b), hg.row(b), hidden, j),
                                                           c.row(b)[j], g[e], g[total + e], dprev);
    if (dc) dc[e] = dprev;
    T* outs[2] = {dx, dh};
    for (T* out : outs) {
      if (!out) continue;
      T* row = out + b * ops::lstm::kGates * hidden;
      row[j] = d.i, row[hidden + j] = d.f, row[2 * hidden + j] = d.g, row[3 * hidden + j] = d.o;
    }
  }
}

}  // namespace

void lstm_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& c,
               const TensorView& out, cudaStream_t stream) {
  const std::int64_t batch = c.shape[0], hidden = c.shape[1], total = batch * hidden;
  if (total == 0) return;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    lstm_cell_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(FirstAxis<T>(input_gates), FirstAxis<T>(hidden_gates),
                                                                     FirstAxis<T>(c), batch, hidden,
                                                                     static_cast<T*>(out.data));
  };
  if (c.dtype == DataType::float64) run(double{});
  else run(float{});
  CUDA_CHECK_LAUNCH();
}

void lstm_cell_backward(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& c,
                        const TensorView& g, const TensorView& d_input_gates, const TensorView& d_hidden_gates,
                        const TensorView& dc, cudaStream_t stream) {
  const std::int64_t batch = c.shape[0], hidden = c.shape[1], total = batch * hidden;
  if (total == 0) return;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    lstm_cell_backward_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
        FirstAxis<T>(input_gates), FirstAxis<T>(hidden_gates), FirstAxis<T>(c), static_cast<const T*>(g.data), batch, hidden,
        static_cast<T*>(d_input_gates.data), static_cast<T*>(d_hidden_gates.data), static_cast<T*>(dc.data));
  };
  if (c.dtype == DataType::float64) run(double{});
  else run(float{});
  CUDA_CHECK_LAUNCH();
}

}  // namespace ndgc::cuda::kernels
