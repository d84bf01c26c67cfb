// CUDA kernels for the fused optimizer updates, twin of
// src/ops/cpu/optimizer_kernels.cpp: one pass over the parameter, its
// gradient and its state (contiguous float views of one dtype; the engine
// returns false for anything else and the ops layer composes the update).
// One element's maths is ops/optimizer_math.hpp's, the CPU loops' own.
#include "kernels.hpp"
#include "launch.cuh"
#include "ops/optimizer_math.hpp"

namespace ndgc::cuda::kernels {
namespace {

template <class T>
__global__ void adam_kernel(T* w, const T* g, T* m, T* v, std::int64_t n, ops::update::AdamConstants<T> k,
                            ops::update::AdamSteps steps) {
  if (steps.steps) ops::update::apply_steps(k, steps);  // read where the kernel runs: a replay sees this step's t
  const bool decay = k.wd != T(0);
  for (std::int64_t i = global_index(); i < n; i += grid_stride())
    ops::update::adam_step(w[i], g[i], m[i], v[i], k, decay);
}

template <class T>
__global__ void sgd_kernel(T* w, const T* g, T* m, std::int64_t n, T lr, T mu, T wd) {
  const bool decay = wd != T(0);
  for (std::int64_t i = global_index(); i < n; i += grid_stride())
    ops::update::sgd_step(w[i], g[i], m ? m + i : nullptr, lr, mu, wd, decay);
}

}  // namespace

void adam(const TensorView& w, const TensorView& g, const TensorView& m, const TensorView& v,
          const ops::AdamHyper& h, cudaStream_t stream) {
  const std::int64_t n = w.size();
  if (n == 0) return;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    adam_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<T*>(w.data), static_cast<const T*>(g.data), static_cast<T*>(m.data), static_cast<T*>(v.data), n,
        ops::update::adam_constants<T>(h), ops::update::adam_steps(h));
  };
  if (w.dtype == DataType::float32) run(float{});
  else run(double{});
  CUDA_CHECK_LAUNCH();
}

void sgd(const TensorView& w, const TensorView& g, const TensorView& m, const ops::SgdHyper& h,
         cudaStream_t stream) {
  const std::int64_t n = w.size();
  if (n == 0) return;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    sgd_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(w.data), static_cast<const T*>(g.data),
                                                           static_cast<T*>(m.data), n, T(h.learning_rate),
                                                           T(h.momentum), T(h.weight_decay));
  };
  if (w.dtype == DataType::float32) run(float{});
  else run(double{});
  CUDA_CHECK_LAUNCH();
}

}  // namespace ndgc::cuda::kernels
