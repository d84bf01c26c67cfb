// The launchers of the .cu kernels, called by cuda_engine.cpp. Each queues
// its work on `stream` and returns; views are device views with the ops
// layer's contract (ops/engine.hpp). `err` is the calling thread's error slot
// (cuda_context.hpp) for kernels that validate values.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "ops/engine.hpp"

namespace ndgc::cuda::kernels {

using ops::TensorView;

// elementwise_kernels.cu
void fill(const TensorView& out, double value, cudaStream_t stream);
void copy(const TensorView& in, const TensorView& out, cudaStream_t stream);
void unary(ops::Unary op, const TensorView& in, const TensorView& out, cudaStream_t stream);
// a or b may be a one-element scalar operand: `scalar` holds it when `scalar_side` is 1 (left) or 2 (right).
void binary(ops::Binary op, const TensorView& a, const TensorView& b, const TensorView& out, double scalar,
            int scalar_side, std::int64_t* err, cudaStream_t stream);
void where(const TensorView& condition, const TensorView& a, const TensorView& b, const TensorView& out,
           cudaStream_t stream);

// generator_kernels.cu (the CPU twins are in cpu_engine.cpp)
void arange(const TensorView& out, double start, double step, cudaStream_t stream);
void eye(const TensorView& out, cudaStream_t stream);
// The random kernels resolve `draw` on the device (random::start_of): a
// graph's draw reads its state when a replay runs.
void random_uniform(const TensorView& out, double low, double high, const ops::RandomDraw& draw,
                    cudaStream_t stream);
void random_normal(const TensorView& out, double mean, double stddev, const ops::RandomDraw& draw,
                   cudaStream_t stream);
// state[0] = seed, state[1] = base: a device graph's draw state before a replay.
void set_draw_state(std::uint64_t* state, std::uint64_t seed, std::uint64_t base, cudaStream_t stream);
// `out` is contiguous and already zero.
void one_hot(const TensorView& indices, std::int64_t depth, const TensorView& out, std::int64_t* err,
             cudaStream_t stream);

// reduce_kernels.cu (`device`: where long rows' partial results go, Note [Split rows])
void reduce(ops::Reduce op, const TensorView& in, std::uint32_t axes, const TensorView& out, int device,
            cudaStream_t stream);
void arg_reduce(bool max, const TensorView& in, int axis, const TensorView& out, int device, cudaStream_t stream);
void softmax(const TensorView& in, int axis, bool log, const TensorView& out, cudaStream_t stream);

// matmul_kernel.cu: out = a × b (accumulate: out += a × b), batched over the
// leading axes; float32/float64 on cuBLAS, integers on a plain kernel (cuBLAS
// has no such product). Returns false when `out`'s layout is not one cuBLAS can
// write (its last axis not of stride 1), for matmul_add's fallback.
bool matmul(const TensorView& a, const TensorView& b, const TensorView& out, bool accumulate, int device,
            cudaStream_t stream);

// optimizer_kernels.cu (contiguous float views of one dtype)
void adam(const TensorView& w, const TensorView& g, const TensorView& m, const TensorView& v,
          const ops::AdamHyper& h, cudaStream_t stream);
void sgd(const TensorView& w, const TensorView& g, const TensorView& m, const ops::SgdHyper& h,
         cudaStream_t stream);

// The layer kernels (issue 27), float32/float64, with the views of
// ops/engine.hpp's layer virtuals: cuda_engine_layers.cpp checks dtypes,
// copies what a kernel wants contiguous, and turns flagged errors into
// exceptions. Each is deterministic: no atomics on values, sums in a fixed
// order for a given shape.

// conv_kernels.cu: one thread per col entry, dx pixel or pooled output
// (ops/conv_math.hpp); x any strides, g (pool backward) any strides.
void im2col(const TensorView& x, const ops::Window2d& w, const TensorView& col, cudaStream_t stream);
void col2im(const TensorView& col, const ops::Window2d& w, const TensorView& dx, cudaStream_t stream);
void pool2d(bool max, const TensorView& x, const ops::Window2d& w, const TensorView& out, cudaStream_t stream);
void pool2d_backward(bool max, const TensorView& x, const TensorView& g, const ops::Window2d& w,
                     const TensorView& dx, cudaStream_t stream);

// layer_kernels.cu: GELU and dropout element-wise (x, g any strides; out
// contiguous); embedding over indices already packed as contiguous int64.
void gelu(const TensorView& x, const TensorView& out, cudaStream_t stream);
void gelu_backward(const TensorView& x, const TensorView& g, const TensorView& dx, cudaStream_t stream);
void dropout(const TensorView& x, double p, const ops::RandomDraw& draw, const TensorView& out,
             cudaStream_t stream);
// Flags the first index (by position) outside [0, rows): err = [1, count - position].
void check_indices(const std::int64_t* indices, std::int64_t count, std::int64_t rows, std::int64_t* err,
                   cudaStream_t stream);
// out [count, D] = weight's rows (any strides); an index outside [0, V) writes nothing.
void embedding(const std::int64_t* indices, std::int64_t count, const TensorView& weight, const TensorView& out,
               cudaStream_t stream);
// dweight [V, D] (contiguous) from g [count, D] (any strides): Note [Embedding
// gradient by sorting] in layer_kernels.cu. Scratch from `device`'s allocator.
void embedding_backward(const std::int64_t* indices, std::int64_t count, const TensorView& g,
                        const TensorView& dweight, int device, cudaStream_t stream);

// norm_kernels.cu: x, g and outputs contiguous; parameter vectors any stride.
void layer_norm(const TensorView& x, const TensorView& gamma, const TensorView& beta, double eps,
                const TensorView& out, cudaStream_t stream);
void layer_norm_backward(const TensorView& x, const TensorView& gamma, const TensorView& g, double eps,
                         const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta, int device,
                         cudaStream_t stream);
void batch_norm_stats(const TensorView& x, const TensorView& mean, const TensorView& var, int device,
                      cudaStream_t stream);
void batch_norm(const TensorView& x, const TensorView& mean, const TensorView& var, const TensorView& gamma,
                const TensorView& beta, double eps, const TensorView& out, cudaStream_t stream);
void batch_norm_backward(const TensorView& x, const TensorView& mean, const TensorView& var,
                         const TensorView& gamma, const TensorView& g, double eps, bool training,
                         const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta, int device,
                         cudaStream_t stream);

// lstm_kernels.cu: gate and state views with their last axis contiguous;
// g contiguous; a gradient view with null data is not wanted.
void lstm_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& c,
               const TensorView& out, cudaStream_t stream);
void lstm_cell_backward(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& c,
                        const TensorView& g, const TensorView& d_input_gates, const TensorView& d_hidden_gates,
                        const TensorView& dc, cudaStream_t stream);

}  // namespace ndgc::cuda::kernels
