// CUDA reductions: reduce over any axes, arg max/min along one axis, softmax.
// Twin of src/ops/cpu/reduce_kernels.cpp, with the same semantics: signed
// integer sums wrap, integer means divide in the integer type, max and min
// propagate NaN, arg max/min return the first best index (a NaN wins).
//
// One block per output row (grid-stride over rows), its threads striding
// over the row's reduced elements through the shared ReduceSplit
// (ops/index_math.hpp), then a shared-memory tree. No copy of the input,
// whatever its layout. Simple and correct; a reduction with few rows and
// very long ones (a full sum) uses one block per row and leaves most of the
// device idle — splitting such rows across blocks is the next step.
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels.hpp"
#include "launch.cuh"
#include "ops/random_stream.hpp"

namespace ndgc::cuda::kernels {
namespace {

using ops::Reduce;
using ops::index::ReduceSplit;

template <class T>
struct Slot {  // a partial result; `has` false = nothing seen yet
  T value;
  std::int64_t index;
  bool has;
};

template <class T>
__device__ bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

template <class T>
__device__ T combine(Reduce op, T a, T b) {
  switch (op) {
    case Reduce::sum:
    case Reduce::mean:
      if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        using U = std::make_unsigned_t<T>;
        return T(U(a) + U(b));  // wraps, as the CPU's WrappingSum
      } else {
        return a + b;
      }
    case Reduce::max: return is_nan(a) ? a : is_nan(b) ? b : (a > b ? a : b);
    case Reduce::min: return is_nan(a) ? a : is_nan(b) ? b : (a < b ? a : b);
  }
  return a;
}

// Arg max/min: the better candidate; ties and NaN go to the smaller index
// (NumPy: the first NaN, else the first best).
template <class T>
__device__ Slot<T> better(bool max, Slot<T> a, Slot<T> b) {
  if (!a.has) return b;
  if (!b.has) return a;
  const bool an = is_nan(a.value), bn = is_nan(b.value);
  if (an || bn) return (an && bn) ? (a.index < b.index ? a : b) : (an ? a : b);
  if (a.value == b.value) return a.index < b.index ? a : b;
  return (max ? a.value > b.value : a.value < b.value) ? a : b;
}

// Tree reduction of one slot per thread; every thread gets the block's result.
template <class T, class F>
__device__ Slot<T> block_reduce(Slot<T> mine, F f) {
  __shared__ Slot<T> shm[kThreads];
  shm[threadIdx.x] = mine;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (int(threadIdx.x) < width) shm[threadIdx.x] = f(shm[threadIdx.x], shm[threadIdx.x + width]);
    __syncthreads();
  }
  Slot<T> result = shm[0];
  __syncthreads();  // shm is reused by the next row
  return result;
}

template <class T>
__global__ void reduce_kernel(Reduce op, const T* in, ReduceSplit s, T* out) {
  for (std::int64_t row = blockIdx.x; row < s.rows; row += gridDim.x) {
    const T* base = in + s.row_offset(row);
    Slot<T> mine{T(0), 0, false};
    for (std::int64_t c = threadIdx.x; c < s.cols; c += blockDim.x) {
      const T x = base[s.col_offset(c)];
      mine.value = mine.has ? combine(op, mine.value, x) : x;
      mine.has = true;
    }
    Slot<T> total = block_reduce(mine, [op](Slot<T> a, Slot<T> b) {
      if (!a.has) return b;
      if (!b.has) return a;
      return Slot<T>{combine(op, a.value, b.value), 0, true};
    });
    if (threadIdx.x == 0) out[row] = op == Reduce::mean ? T(total.value / T(s.cols)) : total.value;
  }
}

template <class T>
__global__ void arg_reduce_kernel(bool max, const T* in, ReduceSplit s, std::int64_t* out) {
  for (std::int64_t row = blockIdx.x; row < s.rows; row += gridDim.x) {
    const T* base = in + s.row_offset(row);
    Slot<T> mine{T(0), 0, false};
    for (std::int64_t c = threadIdx.x; c < s.cols; c += blockDim.x)
      mine = better(max, mine, Slot<T>{base[s.col_offset(c)], c, true});
    Slot<T> best = block_reduce(mine, [max](Slot<T> a, Slot<T> b) { return better(max, a, b); });
    if (threadIdx.x == 0) out[row] = best.has ? best.index : 0;
  }
}

// Softmax over the reduced axis: max, sum of exp(x - max), then the outputs.
template <class T>
__global__ void softmax_kernel(const T* in, ReduceSplit s, T* out, ReduceSplit so, bool log) {
  for (std::int64_t row = blockIdx.x; row < s.rows; row += gridDim.x) {
    const T* x = in + s.row_offset(row);
    T* y = out + so.row_offset(row);
    Slot<T> mine{T(0), 0, false};
    for (std::int64_t c = threadIdx.x; c < s.cols; c += blockDim.x) {
      const T v = x[s.col_offset(c)];
      mine.value = mine.has ? combine(Reduce::max, mine.value, v) : v;
      mine.has = true;
    }
    const T m = block_reduce(mine, [](Slot<T> a, Slot<T> b) {
                  if (!a.has) return b;
                  if (!b.has) return a;
                  return Slot<T>{combine(Reduce::max, a.value, b.value), 0, true};
                }).value;
    Slot<T> part{T(0), 0, true};
    for (std::int64_t c = threadIdx.x; c < s.cols; c += blockDim.x) part.value += ::exp(x[s.col_offset(c)] - m);
    const T sum = block_reduce(part, [](Slot<T> a, Slot<T> b) { return Slot<T>{a.value + b.value, 0, true}; }).value;
    const T log_sum = ::log(sum);
    for (std::int64_t c = threadIdx.x; c < s.cols; c += blockDim.x) {
      const T d = x[s.col_offset(c)] - m;
      y[so.col_offset(c)] = log ? d - log_sum : ::exp(d) / sum;
    }
  }
}

unsigned row_blocks(std::int64_t rows) { return unsigned(rows < kMaxBlocks ? (rows < 1 ? 1 : rows) : kMaxBlocks); }

}  // namespace

void reduce(Reduce op, const TensorView& in, std::uint32_t axes, const TensorView& out, cudaStream_t stream) {
  const ReduceSplit s = ops::index::split_reduction(in, axes);
  if (s.rows == 0) return;
  if (s.cols == 0) {
    fill(out, op == Reduce::sum ? 0.0 : std::numeric_limits<double>::quiet_NaN(), stream);
    return;
  }
  dispatch(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {  // the ops layer converts booleans first
      reduce_kernel<T><<<row_blocks(s.rows), kThreads, 0, stream>>>(op, static_cast<const T*>(in.data), s,
                                                                       static_cast<T*>(out.data));
      CUDA_CHECK_LAUNCH();
    }
  });
}

void arg_reduce(bool max, const TensorView& in, int axis, const TensorView& out, cudaStream_t stream) {
  const ReduceSplit s = ops::index::split_reduction(in, 1u << axis);
  if (s.rows == 0) return;
  dispatch(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    arg_reduce_kernel<T><<<row_blocks(s.rows), kThreads, 0, stream>>>(max, static_cast<const T*>(in.data), s,
                                                                         static_cast<std::int64_t*>(out.data));
    CUDA_CHECK_LAUNCH();
  });
}

void softmax(const TensorView& in, int axis, bool log, const TensorView& out, cudaStream_t stream) {
  const ReduceSplit s = ops::index::split_reduction(in, 1u << axis);
  const ReduceSplit so = ops::index::split_reduction(out, 1u << axis);
  if (s.rows == 0 || s.cols == 0) return;
  dispatch(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      softmax_kernel<T><<<row_blocks(s.rows), kThreads, 0, stream>>>(static_cast<const T*>(in.data), s,
                                                                        static_cast<T*>(out.data), so, log);
      CUDA_CHECK_LAUNCH();
    }
  });
}

}  // namespace ndgc::cuda::kernels
