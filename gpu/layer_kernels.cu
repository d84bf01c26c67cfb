// CUDA kernels of GELU, dropout and embedding (forward and backward). Twin of
// src/ops/cpu/layer_kernels.cpp, with the same semantics.
//
// GELU and dropout are element-wise (launch.cuh's for_each, any input
// strides). Dropout keeps element i (row-major, the contiguous output's
// offset) when random::unit(seed, offset + i) >= p, decided by
// random::keeps, the very function the CPU calls (ops/random_stream.hpp):
// a seed gives the same mask, bit for bit,
// on both devices, and the backward pass redraws it. Embedding reads indices
// the engine packed as contiguous int64; its backward is deterministic
// without atomics (Note [Embedding gradient by sorting]).
#include <numbers>

#include <cub/device/device_radix_sort.cuh>

#include "cuda_context.hpp"
#include "kernels.hpp"
#include "launch.cuh"
#include "ops/random_stream.hpp"

namespace ndgc::cuda::kernels {
namespace {

// Φ(x), the standard normal CDF; half_sqrt2 = √2 / 2 as the CPU computes it.
template <class T>
__device__ T phi_cdf(T x, T half_sqrt2) {
  return T(0.5) * (T(1) + ::erf(x * half_sqrt2));
}

// The CPU's constants, computed on the host the CPU's way and passed to the kernels.
template <class T>
struct GeluConstants {
  T half_sqrt2 = T(std::numbers::sqrt2 / 2);
  T density = T(std::numbers::inv_sqrtpi / std::numbers::sqrt2);  // 1 / √(2π)
};

// T is the stored type; the arithmetic is Compute<T>'s (float for 16 bits).
template <class T>
void gelu_typed(const TensorView& x, const TensorView& out, cudaStream_t stream) {
  using C = Compute<T>;
  T* o = static_cast<T*>(out.data);
  const T* in = static_cast<const T*>(x.data);
  const GeluConstants<C> k;
  const TensorView* views[2] = {&out, &x};
  for_each(views, stream, [=] __device__(std::int64_t, const std::int64_t(&off)[2]) {
    const C v = C(in[off[1]]);
    o[off[0]] = T(v * phi_cdf(v, k.half_sqrt2));
  });
}

template <class T>
void gelu_backward_typed(const TensorView& x, const TensorView& g, const TensorView& dx, cudaStream_t stream) {
  using C = Compute<T>;
  T* d = static_cast<T*>(dx.data);
  const T* in = static_cast<const T*>(x.data);
  const T* gin = static_cast<const T*>(g.data);
  const GeluConstants<C> k;
  const TensorView* views[3] = {&dx, &x, &g};
  for_each(views, stream, [=] __device__(std::int64_t, const std::int64_t(&off)[3]) {
    const C v = C(in[off[1]]);
    d[off[0]] = T(C(gin[off[2]]) * (phi_cdf(v, k.half_sqrt2) + v * k.density * ::exp(C(-0.5) * v * v)));
  });
}

template <class T>
void dropout_typed(const TensorView& x, double p, const ops::RandomDraw& draw, const TensorView& out,
                   cudaStream_t stream) {
  using C = Compute<T>;
  T* o = static_cast<T*>(out.data);
  const T* in = static_cast<const T*>(x.data);
  const C scale = C(1.0 / (1.0 - p));
  const std::uint64_t threshold = ops::random::keep_threshold(p);
  const TensorView* views[2] = {&out, &x};
  for_each(views, stream, [=] __device__(std::int64_t, const std::int64_t(&off)[2]) {
    // out is contiguous: its offset is the element's row-major position.
    const ops::RandomDraw at = ops::random::start_of(draw);
    o[off[0]] = T(ops::random::keeps(at.seed, at.offset + std::uint64_t(off[0]), threshold) ? C(in[off[1]]) * scale
                                                                                           : C(0));
  });
}

// err[1] keeps count - position of the first bad index: the largest value wins.
__global__ void check_indices_kernel(const std::int64_t* idx, std::int64_t count, std::int64_t rows,
                                     std::int64_t* err) {
  for (std::int64_t i = global_index(); i < count; i += grid_stride()) {
    const std::int64_t k = idx[i];
    if (k >= 0 && k < rows) continue;
    atomicMax(reinterpret_cast<unsigned long long*>(err + 1), static_cast<unsigned long long>(count - i));
    err[0] = 1;  // every offender writes the same value: a benign race
  }
}

template <class T>
__global__ void embedding_kernel(const std::int64_t* idx, std::int64_t count, const T* w, std::int64_t rows,
                                 std::int64_t dim, std::int64_t ws0, std::int64_t ws1, T* out) {
  const std::int64_t total = count * dim;
  for (std::int64_t e = global_index(); e < total; e += grid_stride()) {
    const std::int64_t k = idx[e / dim], d = e % dim;
    if (k >= 0 && k < rows) out[e] = w[k * ws0 + d * ws1];  // a bad index was flagged: see check_indices
  }
}

// Note [Embedding gradient by sorting]
// dweight[r] = the sum of g's rows at the positions i with indices[i] == r,
// added in position order from 0, as the CPU adds them. A radix sort is
// stable, so sorting the pairs (index, position) by index (CUB) groups each
// row's positions and keeps them in position order; then one thread per
// (row, column) finds its row's run by binary search and adds the run's
// entries in order. No atomics: the CPU's bits, every run, whatever the
// repeats. A row no index names gets 0. An index out of range (unchecked in
// a captured graph) sorts as row V, which no thread reads. Cost: one sort of
// `count` pairs, V·D binary searches of log(count) steps, count·D additions;
// scratch: the pairs twice and CUB's temporary storage, all from the device's
// allocator.
__global__ void sort_pairs_kernel(const std::int64_t* idx, std::int64_t count, std::int64_t rows,
                                  std::uint64_t* keys, std::int64_t* positions) {
  for (std::int64_t i = global_index(); i < count; i += grid_stride()) {
    const std::int64_t k = idx[i];
    keys[i] = k >= 0 && k < rows ? std::uint64_t(k) : std::uint64_t(rows);
    positions[i] = i;
  }
}

template <class T>
__global__ void embedding_backward_kernel(const std::uint64_t* keys, const std::int64_t* positions,
                                          std::int64_t count, const T* g, std::int64_t gs0, std::int64_t gs1,
                                          std::int64_t rows, std::int64_t dim, T* dw) {
  const std::int64_t total = rows * dim;
  for (std::int64_t e = global_index(); e < total; e += grid_stride()) {
    const std::uint64_t r = std::uint64_t(e / dim);
    const std::int64_t d = e % dim;
    std::int64_t lo = 0, hi = count;  // the first key >= r
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (keys[mid] < r) lo = mid + 1;
      else hi = mid;
    }
    T s = T(0);
    for (std::int64_t j = lo; j < count && keys[j] == r; ++j) s += g[positions[j] * gs0 + d * gs1];
    dw[e] = s;
  }
}

// The key bits a sort needs for values in [0, rows].
int key_bits(std::int64_t rows) {
  int bits = 1;
  while (bits < 64 && (std::uint64_t(1) << bits) <= std::uint64_t(rows)) ++bits;
  return bits;
}

template <class T>
void embedding_backward_typed(const std::int64_t* idx, std::int64_t count, const TensorView& g,
                              const TensorView& dweight, int device, cudaStream_t stream) {
  const std::int64_t rows = dweight.shape[0], dim = dweight.shape[1];
  const std::size_t pairs = std::size_t(count) * sizeof(std::uint64_t);  // keys and positions: 8 bytes each
  DeviceScratch keys_in(device, pairs), keys_out(device, pairs), pos_in(device, pairs), pos_out(device, pairs);
  auto* ki = static_cast<std::uint64_t*>(keys_in.get());
  auto* ko = static_cast<std::uint64_t*>(keys_out.get());
  auto* pi = static_cast<std::int64_t*>(pos_in.get());
  auto* po = static_cast<std::int64_t*>(pos_out.get());
  sort_pairs_kernel<<<blocks_for(count), kThreads, 0, stream>>>(idx, count, rows, ki, pi);
  CUDA_CHECK_LAUNCH();
  const int bits = key_bits(rows);
  std::size_t temp_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, ki, ko, pi, po, count, 0, bits, stream));
  DeviceScratch temp(device, temp_bytes > 0 ? temp_bytes : 1);
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, ki, ko, pi, po, count, 0, bits, stream));
  const std::int64_t total = rows * dim;
  embedding_backward_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
      ko, po, count, static_cast<const T*>(g.data), g.strides[0], g.strides[1], rows, dim,
      static_cast<T*>(dweight.data));
  CUDA_CHECK_LAUNCH();
}  // the scratch buffers are freed stream-ordered, after the kernels

}  // namespace

void gelu(const TensorView& x, const TensorView& out, cudaStream_t stream) {
  dispatch_floating(x.dtype, [&](auto tag) { gelu_typed<decltype(tag)>(x, out, stream); });
}

void gelu_backward(const TensorView& x, const TensorView& g, const TensorView& dx, cudaStream_t stream) {
  dispatch_floating(x.dtype, [&](auto tag) { gelu_backward_typed<decltype(tag)>(x, g, dx, stream); });
}

void dropout(const TensorView& x, double p, const ops::RandomDraw& draw, const TensorView& out,
             cudaStream_t stream) {
  dispatch_floating(x.dtype, [&](auto tag) { dropout_typed<decltype(tag)>(x, p, draw, out, stream); });
}

void check_indices(const std::int64_t* indices, std::int64_t count, std::int64_t rows, std::int64_t* err,
                   cudaStream_t stream) {
  if (count == 0) return;
  check_indices_kernel<<<blocks_for(count), kThreads, 0, stream>>>(indices, count, rows, err);
  CUDA_CHECK_LAUNCH();
}

void embedding(const std::int64_t* indices, std::int64_t count, const TensorView& weight, const TensorView& out,
               cudaStream_t stream) {
  const std::int64_t rows = weight.shape[0], dim = weight.shape[1], total = count * dim;
  if (total == 0) return;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    embedding_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(indices, count, static_cast<const T*>(weight.data),
                                                                     rows, dim, weight.strides[0], weight.strides[1],
                                                                     static_cast<T*>(out.data));
  };
  if (weight.dtype == DataType::float64) run(double{});
  else run(float{});
  CUDA_CHECK_LAUNCH();
}

void embedding_backward(const std::int64_t* indices, std::int64_t count, const TensorView& g,
                        const TensorView& dweight, int device, cudaStream_t stream) {
  if (dweight.size() == 0) return;
  if (count == 0) {
    fill(dweight, 0.0, stream);
    return;
  }
  if (dweight.dtype == DataType::float64) embedding_backward_typed<double>(indices, count, g, dweight, device, stream);
  else embedding_backward_typed<float>(indices, count, g, dweight, device, stream);
}

}  // namespace ndgc::cuda::kernels
