// CUDA reductions: reduce over any axes, arg max/min along one axis, softmax.
// Twin of src/ops/cpu/reduce_kernels.cpp, with the same semantics: signed
// integer sums wrap, integer means divide in the integer type, max and min
// propagate NaN, arg max/min return the first best index (a NaN wins).
//
// One block per output row (grid-stride over rows), its threads striding
// over the row's reduced elements through the shared ReduceSplit
// (ops/index_math.hpp), then a shared-memory tree. No copy of the input,
// whatever its layout. Reductions and arg-reductions with few long rows (a
// full sum is one row) cut each row into chunks, reduced in two passes
// (Note [Split rows] in ops/index_math.hpp); how values and partials combine
// is ops/reduce_math.hpp, which the host tests run. Softmax rows are not cut.
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels.hpp"
#include "launch.cuh"
#include "cuda_context.hpp"
#include "ops/random_stream.hpp"
#include "ops/reduce_math.hpp"

namespace ndgc::cuda::kernels {
namespace {

using ops::Reduce;
using ops::index::ColumnChunks;
using ops::index::ReduceSplit;
using ops::reduce_math::better;
using ops::reduce_math::combine;
using ops::reduce_math::finish;
using ops::reduce_math::merge;
using ops::reduce_math::Slot;

// Rows are cut when there are fewer than this many blocks' worth (an H100 or
// H200 keeps about 1000 of these blocks resident), into chunks of at least
// 16 elements per thread.
constexpr std::int64_t kSplitTargetBlocks = 1024;
constexpr std::int64_t kMinChunk = 16 * kThreads;

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

// Columns [begin, end) of the row at `base`, reduced by the block: every
// thread gets the result.
template <class T>
__device__ Slot<T> reduce_columns(Reduce op, const T* base, const ReduceSplit& s, std::int64_t begin,
                                  std::int64_t end) {
  Slot<T> mine{T(0), 0, false};
  for (std::int64_t c = begin + threadIdx.x; c < end; c += blockDim.x) {
    const T x = base[s.col_offset(c)];
    mine.value = mine.has ? combine(op, mine.value, x) : x;
    mine.has = true;
  }
  return block_reduce(mine, [op](Slot<T> a, Slot<T> b) { return merge(op, a, b); });
}

template <class T>
__device__ Slot<T> arg_columns(bool max, const T* base, const ReduceSplit& s, std::int64_t begin, std::int64_t end) {
  Slot<T> mine{T(0), 0, false};
  for (std::int64_t c = begin + threadIdx.x; c < end; c += blockDim.x)
    mine = better(max, mine, Slot<T>{base[s.col_offset(c)], c, true});
  return block_reduce(mine, [max](Slot<T> a, Slot<T> b) { return better(max, a, b); });
}

template <class T>
__global__ void reduce_kernel(Reduce op, const T* in, ReduceSplit s, T* out) {
  for (std::int64_t row = blockIdx.x; row < s.rows; row += gridDim.x) {
    const Slot<T> total = reduce_columns(op, in + s.row_offset(row), s, 0, s.cols);
    if (threadIdx.x == 0) out[row] = finish(op, total, s.cols);
  }
}

template <class T>
__global__ void arg_reduce_kernel(bool max, const T* in, ReduceSplit s, std::int64_t* out) {
  for (std::int64_t row = blockIdx.x; row < s.rows; row += gridDim.x) {
    const Slot<T> best = arg_columns(max, in + s.row_offset(row), s, 0, s.cols);
    if (threadIdx.x == 0) out[row] = best.has ? best.index : 0;
  }
}

// First pass of a split row: partial[row * chunks.count + k] is chunk k of row.
template <class T>
__global__ void partial_kernel(bool arg, Reduce op, bool max, const T* in, ReduceSplit s, ColumnChunks chunks,
                               Slot<T>* partial) {
  const std::int64_t items = s.rows * chunks.count;
  for (std::int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const std::int64_t row = item / chunks.count, k = item % chunks.count;
    const T* base = in + s.row_offset(row);
    const std::int64_t begin = chunks.begin(k), end = chunks.end(k, s.cols);
    const Slot<T> part = arg ? arg_columns(max, base, s, begin, end) : reduce_columns(op, base, s, begin, end);
    if (threadIdx.x == 0) partial[item] = part;
  }
}

// Second pass: a row's partials, in chunk order.
template <class T>
__global__ void reduce_partials_kernel(Reduce op, const Slot<T>* partial, std::int64_t rows, ColumnChunks chunks,
                                       std::int64_t cols, T* out) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    Slot<T> mine{T(0), 0, false};
    for (std::int64_t k = threadIdx.x; k < chunks.count; k += blockDim.x)
      mine = merge(op, mine, partial[row * chunks.count + k]);
    const Slot<T> total = block_reduce(mine, [op](Slot<T> a, Slot<T> b) { return merge(op, a, b); });
    if (threadIdx.x == 0) out[row] = finish(op, total, cols);
  }
}

template <class T>
__global__ void arg_partials_kernel(bool max, const Slot<T>* partial, std::int64_t rows, ColumnChunks chunks,
                                    std::int64_t* out) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    Slot<T> mine{T(0), 0, false};
    for (std::int64_t k = threadIdx.x; k < chunks.count; k += blockDim.x)
      mine = better(max, mine, partial[row * chunks.count + k]);
    const Slot<T> best = block_reduce(mine, [max](Slot<T> a, Slot<T> b) { return better(max, a, b); });
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
    const T m = block_reduce(mine, [](Slot<T> a, Slot<T> b) { return merge(Reduce::max, a, b); }).value;
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

void reduce(Reduce op, const TensorView& in, std::uint32_t axes, const TensorView& out, int device,
            cudaStream_t stream) {
  const ReduceSplit s = ops::index::split_reduction(in, axes);
  if (s.rows == 0) return;
  if (s.cols == 0) {
    fill(out, op == Reduce::sum ? 0.0 : std::numeric_limits<double>::quiet_NaN(), stream);
    return;
  }
  const ColumnChunks chunks = ops::index::chunk_columns(s.rows, s.cols, kSplitTargetBlocks, kMinChunk);
  dispatch(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {  // the ops layer converts booleans first
      const T* x = static_cast<const T*>(in.data);
      T* y = static_cast<T*>(out.data);
      if (chunks.count == 1) {
        reduce_kernel<T><<<row_blocks(s.rows), kThreads, 0, stream>>>(op, x, s, y);
        CUDA_CHECK_LAUNCH();
        return;
      }
      const std::int64_t items = s.rows * chunks.count;
      DeviceScratch partial(device, std::size_t(items) * sizeof(Slot<T>));
      auto* p = static_cast<Slot<T>*>(partial.get());
      partial_kernel<T><<<row_blocks(items), kThreads, 0, stream>>>(false, op, false, x, s, chunks, p);
      CUDA_CHECK_LAUNCH();
      reduce_partials_kernel<T><<<row_blocks(s.rows), kThreads, 0, stream>>>(op, p, s.rows, chunks, s.cols, y);
      CUDA_CHECK_LAUNCH();
    }
  });
}

void arg_reduce(bool max, const TensorView& in, int axis, const TensorView& out, int device, cudaStream_t stream) {
  const ReduceSplit s = ops::index::split_reduction(in, 1u << axis);
  if (s.rows == 0) return;
  const ColumnChunks chunks = ops::index::chunk_columns(s.rows, s.cols, kSplitTargetBlocks, kMinChunk);
  dispatch(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(in.data);
    auto* y = static_cast<std::int64_t*>(out.data);
    if (chunks.count == 1) {
      arg_reduce_kernel<T><<<row_blocks(s.rows), kThreads, 0, stream>>>(max, x, s, y);
      CUDA_CHECK_LAUNCH();
      return;
    }
    const std::int64_t items = s.rows * chunks.count;
    DeviceScratch partial(device, std::size_t(items) * sizeof(Slot<T>));
    auto* p = static_cast<Slot<T>*>(partial.get());
    partial_kernel<T><<<row_blocks(items), kThreads, 0, stream>>>(true, Reduce::max, max, x, s, chunks, p);
    CUDA_CHECK_LAUNCH();
    arg_partials_kernel<T><<<row_blocks(s.rows), kThreads, 0, stream>>>(max, p, s.rows, chunks, y);
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
