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
using ops::reduce_math::combine;
using ops::reduce_math::merge;
using ops::reduce_math::Reduction;
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
__device__ Slot<T> reduce_columns(Reduction how, const T* base, const ReduceSplit& s, std::int64_t begin,
                                  std::int64_t end) {
  Slot<T> mine{T(0), 0, false};
  for (std::int64_t c = begin + threadIdx.x; c < end; c += blockDim.x)
    mine = how.join(mine, Slot<T>{base[s.col_offset(c)], c, true});
  return block_reduce(mine, [how](Slot<T> a, Slot<T> b) { return how.join(a, b); });
}

// One pass: a block per row.
template <class T, class Out>
__global__ void rows_kernel(Reduction how, const T* in, ReduceSplit s, Out* out) {
  for (std::int64_t row = blockIdx.x; row < s.rows; row += gridDim.x) {
    const Slot<T> total = reduce_columns(how, in + s.row_offset(row), s, 0, s.cols);
    if (threadIdx.x == 0) out[row] = how.result<Out>(total, s.cols);
  }
}

// First pass of split rows: partial[row * chunks.count + k] is chunk k of row.
template <class T>
__global__ void chunks_kernel(Reduction how, const T* in, ReduceSplit s, ColumnChunks chunks, Slot<T>* partial) {
  const std::int64_t items = s.rows * chunks.count;
  for (std::int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const std::int64_t row = item / chunks.count, k = item % chunks.count;
    const Slot<T> part = reduce_columns(how, in + s.row_offset(row), s, chunks.begin(k), chunks.end(k, s.cols));
    if (threadIdx.x == 0) partial[item] = part;
  }
}

// Second pass: each row's partials.
template <class T, class Out>
__global__ void partials_kernel(Reduction how, const Slot<T>* partial, std::int64_t rows, ColumnChunks chunks,
                                std::int64_t cols, Out* out) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    Slot<T> mine{T(0), 0, false};
    for (std::int64_t k = threadIdx.x; k < chunks.count; k += blockDim.x)
      mine = how.join(mine, partial[row * chunks.count + k]);
    const Slot<T> total = block_reduce(mine, [how](Slot<T> a, Slot<T> b) { return how.join(a, b); });
    if (threadIdx.x == 0) out[row] = how.result<Out>(total, cols);
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

// Rows of `s` reduced into `out`, in one pass or, for few long rows, two.
template <class T, class Out>
void launch(Reduction how, const TensorView& in, const ReduceSplit& s, Out* out, int device, cudaStream_t stream) {
  const T* x = static_cast<const T*>(in.data);
  const ColumnChunks chunks = ops::index::chunk_columns(s.rows, s.cols, kSplitTargetBlocks, kMinChunk);
  if (chunks.count == 1) {
    rows_kernel<T, Out><<<row_blocks(s.rows), kThreads, 0, stream>>>(how, x, s, out);
    CUDA_CHECK_LAUNCH();
    return;
  }
  const std::int64_t items = s.rows * chunks.count;
  DeviceScratch partial(device, std::size_t(items) * sizeof(Slot<T>));  // freed stream-ordered
  auto* p = static_cast<Slot<T>*>(partial.get());
  chunks_kernel<T><<<row_blocks(items), kThreads, 0, stream>>>(how, x, s, chunks, p);
  CUDA_CHECK_LAUNCH();
  partials_kernel<T, Out><<<row_blocks(s.rows), kThreads, 0, stream>>>(how, p, s.rows, chunks, s.cols, out);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void reduce(Reduce op, const TensorView& in, std::uint32_t axes, const TensorView& out, int device,
            cudaStream_t stream) {
  const ReduceSplit s = ops::index::split_reduction(in, axes);
  if (s.rows == 0) return;
  if (s.cols == 0) {
    fill(out, op == Reduce::sum ? 0.0 : std::numeric_limits<double>::quiet_NaN(), stream);
    return;
  }
  dispatch(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>)  // the ops layer converts booleans first
      launch<T, T>(Reduction{op, false, false}, in, s, static_cast<T*>(out.data), device, stream);
  });
}

void arg_reduce(bool max, const TensorView& in, int axis, const TensorView& out, int device, cudaStream_t stream) {
  const ReduceSplit s = ops::index::split_reduction(in, 1u << axis);
  if (s.rows == 0) return;
  dispatch(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch<T, std::int64_t>(Reduction{Reduce::max, true, max}, in, s, static_cast<std::int64_t*>(out.data), device,
                            stream);
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
