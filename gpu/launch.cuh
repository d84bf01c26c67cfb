// Launch helpers for the element-wise style kernels (.cu files only).
//
// for_each(views, f) runs f(offsets) once per element of views[0]'s shape,
// with the element offsets of each operand: axes are coalesced first
// (ops/index_math.hpp, the same code the CPU engine's tests run), and a
// walk that is contiguous in every operand takes a kernel without any index
// arithmetic. Grid-stride loops over 64-bit indices: any size, a bounded
// grid. dispatch() turns a runtime dtype into a typed call, as on the CPU.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "ndgc/half.hpp"
#include "ops/index_math.hpp"
#include "support/assert.hpp"

namespace ndgc::cuda {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 65536;  // grid-stride beyond this

inline unsigned blocks_for(std::int64_t n) noexcept {
  std::int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 1 ? 1 : b > kMaxBlocks ? kMaxBlocks : b);
}

// The computing dtypes. float16 and bfloat16 reach only the kernels that take
// them (Engine::kernels_16: copy, fill, unary, binary, where, col2im, the
// pools, GELU, dropout), through dispatch_storage(); every other kernel gets
// them widened to float32 by the widening engine (src/ops/half_widening.hpp).
template <class F>
decltype(auto) dispatch(DataType t, F&& f) {
  switch (t) {
    case DataType::float32: return f(float{});
    case DataType::float64: return f(double{});
    case DataType::int32: return f(std::int32_t{});
    case DataType::int64: return f(std::int64_t{});
    case DataType::uint8: return f(std::uint8_t{});
    case DataType::boolean: break;
    case DataType::float16:
    case DataType::bfloat16:
      support::assertion_failed(__FILE__, __LINE__, "!is_half(t)", "a 16-bit view reached a float32 kernel");
  }
  return f(bool{});
}

// The type a kernel computes a T in: float for the 16-bit types, whose
// results are rounded once on store (the widening engine's bits), T otherwise.
template <class T>
using Compute = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;

// f(T{}) for a floating dtype the engine has checked, the 16-bit ones
// included (Engine::kernels_16's layer kernels).
template <class F>
void dispatch_floating(DataType t, F&& f) {
  if (t == DataType::float64) f(double{});
  else if (t == DataType::float16) f(float16{});
  else if (t == DataType::bfloat16) f(bfloat16{});
  else f(float{});
}

// Every dtype, the 16-bit storage types included.
template <class F>
decltype(auto) dispatch_storage(DataType t, F&& f) {
  if (t == DataType::float16) return f(float16{});
  if (t == DataType::bfloat16) return f(bfloat16{});
  return dispatch(t, std::forward<F>(f));
}

__device__ inline std::int64_t global_index() { return std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline std::int64_t grid_stride() { return std::int64_t(gridDim.x) * blockDim.x; }

template <int N, class F>
__global__ void strided_kernel(ops::index::Strided<N> w, std::int64_t n, F f) {
  for (std::int64_t i = global_index(); i < n; i += grid_stride()) {
    std::int64_t off[N];
    ops::index::offsets(w, i, off);
    f(i, off);
  }
}

template <int N, class F>
__global__ void contiguous_kernel(std::int64_t n, F f) {
  for (std::int64_t i = global_index(); i < n; i += grid_stride()) {
    std::int64_t off[N];
    for (int k = 0; k < N; ++k) off[k] = i;
    f(i, off);
  }
}

// f(linear index, offsets[N]) for every element; offsets in elements of each operand.
template <int N, class F>
void for_each(const ops::TensorView* const (&views)[N], cudaStream_t stream, F f) {
  const std::int64_t n = views[0]->size();
  if (n == 0) return;
  const ops::index::Strided<N> w = ops::index::coalesce(views);
  if (w.contiguous()) contiguous_kernel<N><<<blocks_for(n), kThreads, 0, stream>>>(n, f);
  else strided_kernel<N><<<blocks_for(n), kThreads, 0, stream>>>(w, n, f);
  CUDA_CHECK_LAUNCH();
}

}  // namespace ndgc::cuda
