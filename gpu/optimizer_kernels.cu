// CUDA kernels for the fused optimizer updates, twin of
// src/ops/cpu/optimizer_kernels.cpp: one pass over the parameter, its
// gradient and its state (contiguous float views of one dtype; the engine
// returns false for anything else and the ops layer composes the update).
#include <limits>

#include "kernels.hpp"
#include "launch.cuh"

namespace ndgc::cuda::kernels {
namespace {

// A state value below the smallest normal number is stored as zero, as the
// CPU loops do (Note [No denormal state] in src/ops/cpu/optimizer_kernels.cpp),
// so both devices keep the same state. The GPU has no slow path for
// denormals; this is for agreement, not speed.
template <class T>
__device__ T flush_denormal(T x) {
  return fabs(x) < std::numeric_limits<T>::min() ? T(0) : x;
}

template <class T>
__global__ void adam_kernel(T* w, const T* g, T* m, T* v, std::int64_t n, T b1, T b2, T c1, T c2, T wd, T step,
                            T eps, T inv_bc2) {
  for (std::int64_t i = global_index(); i < n; i += grid_stride()) {
    const T grad = wd != T(0) ? g[i] + wd * w[i] : g[i];
    const T mi = flush_denormal(b1 * m[i] + c1 * grad);
    const T vi = flush_denormal(b2 * v[i] + c2 * grad * grad);
    m[i] = mi;
    v[i] = vi;
    w[i] -= mi / (sqrt(vi * inv_bc2) + eps) * step;  // this order: Note [No denormal state]
  }
}

template <class T>
__global__ void sgd_kernel(T* w, const T* g, T* m, std::int64_t n, T lr, T mu, T wd) {
  for (std::int64_t i = global_index(); i < n; i += grid_stride()) {
    const T grad = wd != T(0) ? g[i] + wd * w[i] : g[i];
    if (m) {
      const T mi = flush_denormal(mu * m[i] + grad);
      m[i] = mi;
      w[i] -= lr * mi;
    } else {
      w[i] -= lr * grad;
    }
  }
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
        T(h.beta1), T(h.beta2), T(1 - h.beta1), T(1 - h.beta2), T(h.weight_decay),
        T(h.learning_rate / h.bias_correction1), T(h.epsilon), T(1 / h.bias_correction2));
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
