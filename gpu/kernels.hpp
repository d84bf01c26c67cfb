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
void random_uniform(const TensorView& out, double low, double high, std::uint64_t seed, std::uint64_t offset,
                    cudaStream_t stream);
void random_normal(const TensorView& out, double mean, double stddev, std::uint64_t seed, std::uint64_t offset,
                   cudaStream_t stream);
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

}  // namespace ndgc::cuda::kernels
