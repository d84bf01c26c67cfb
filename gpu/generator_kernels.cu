// CUDA generator kernels: arange, eye, random_uniform, random_normal, one_hot
// (the CPU twins live in src/ops/cpu/cpu_engine.cpp).
//
// The random kernels call the very functions the CPU engine calls
// (ops/random_stream.hpp): element i of a call draws counter offset + i, so a
// seed gives the same uniform numbers on both devices, bit for bit.
#include <type_traits>

#include "kernels.hpp"
#include "launch.cuh"
#include "ops/random_stream.hpp"

namespace ndgc::cuda::kernels {
namespace {
using ops::random::convert;

// Writes f(i) (a double) into row-major element i of `out`. (Typed bodies:
// a __device__ lambda may not sit inside dispatch()'s generic lambda.)
template <class T, class F>
void generate_typed(const TensorView& out, cudaStream_t stream, F f) {
  T* o = static_cast<T*>(out.data);
  const TensorView* views[1] = {&out};
  for_each(views, stream,
           [=] __device__(std::int64_t i, const std::int64_t(&off)[1]) { o[off[0]] = convert<T>(f(i)); });
}

template <class F>
void generate(const TensorView& out, cudaStream_t stream, F f) {
  dispatch(out.dtype, [&](auto tag) { generate_typed<decltype(tag)>(out, stream, f); });
}

template <class T>
void uniform_typed(const TensorView& out, double low, double high, const ops::RandomDraw& draw,
                   cudaStream_t stream) {
  T* o = static_cast<T*>(out.data);
  const TensorView* views[1] = {&out};
  for_each(views, stream, [=] __device__(std::int64_t i, const std::int64_t(&off)[1]) {
    const ops::RandomDraw at = ops::random::start_of(draw);
    o[off[0]] = ops::random::uniform_at<T>(low, high, at.seed, at.offset + std::uint64_t(i));
  });
}

__global__ void set_draw_state_kernel(std::uint64_t* state, std::uint64_t seed, std::uint64_t base) {
  state[0] = seed;
  state[1] = base;
}

template <class I, class T>
void one_hot_typed(const TensorView& indices, std::int64_t depth, const TensorView& out, std::int64_t* err,
                   cudaStream_t stream) {
  const I* x = static_cast<const I*>(indices.data);
  T* base = static_cast<T*>(out.data);  // contiguous: row r starts at r * depth
  const TensorView* views[1] = {&indices};
  for_each(views, stream, [=] __device__(std::int64_t row, const std::int64_t(&off)[1]) {
    const std::int64_t k = std::int64_t(x[off[0]]);
    if (k < 0 || k >= depth) {
      // One offender is reported (the first to get there; the CPU names the first in order).
      if (atomicCAS(reinterpret_cast<unsigned long long*>(err), 0ull, 1ull) == 0ull) err[1] = k;
      return;
    }
    base[row * depth + k] = T(1);
  });
}

// Functors, not lambdas: a __device__ lambda cannot be passed on through a generic host lambda.
struct Arange {
  double start, step;
  __device__ double operator()(std::int64_t i) const { return start + double(i) * step; }
};
struct Eye {
  std::int64_t cols;
  __device__ double operator()(std::int64_t i) const { return i / cols == i % cols ? 1.0 : 0.0; }
};
struct Normal {
  double mean, stddev;
  ops::RandomDraw draw;
  __device__ double operator()(std::int64_t i) const {
    const ops::RandomDraw at = ops::random::start_of(draw);
    return ops::random::normal_at(mean, stddev, at.seed, at.offset, std::uint64_t(i));
  }
};

}  // namespace

void arange(const TensorView& out, double start, double step, cudaStream_t stream) {
  generate(out, stream, Arange{start, step});
}

void eye(const TensorView& out, cudaStream_t stream) { generate(out, stream, Eye{out.shape[1]}); }

void random_uniform(const TensorView& out, double low, double high, const ops::RandomDraw& draw,
                    cudaStream_t stream) {
  dispatch(out.dtype, [&](auto tag) { uniform_typed<decltype(tag)>(out, low, high, draw, stream); });
}

void random_normal(const TensorView& out, double mean, double stddev, const ops::RandomDraw& draw,
                   cudaStream_t stream) {
  generate(out, stream, Normal{mean, stddev, draw});
}

void set_draw_state(std::uint64_t* state, std::uint64_t seed, std::uint64_t base, cudaStream_t stream) {
  set_draw_state_kernel<<<1, 1, 0, stream>>>(state, seed, base);
  CUDA_CHECK_LAUNCH();
}

void one_hot(const TensorView& indices, std::int64_t depth, const TensorView& out, std::int64_t* err,
             cudaStream_t stream) {
  dispatch(indices.dtype, [&](auto itag) {
    dispatch(out.dtype, [&](auto otag) {
      one_hot_typed<decltype(itag), decltype(otag)>(indices, depth, out, err, stream);
    });
  });
}

}  // namespace ndgc::cuda::kernels
