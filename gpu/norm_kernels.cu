// CUDA kernels of layer_norm and batch_norm (forward, statistics, backward).
// Twin of src/ops/cpu/norm_kernels.cpp, with the same maths.
//
// Statistics are two-pass (mean, then the mean of squared deviations),
// accumulated in double whatever the dtype, as on the CPU. A reduction (a row
// of layer_norm, a column of layer_norm's dgamma) is one block: its threads
// stride over the elements, then a shared-memory tree of fixed shape adds the
// partial sums; a channel of batch_norm is several blocks, one per part of
// its images (Note [Channels in parts]). The order of the additions depends
// only on the shape, so results are the same bits on every run (not the
// CPU's bits: the CPU adds sequentially). x, g and the outputs are
// contiguous; parameter vectors ([D] or [C]) may be strided views, and a
// gradient view with null data is not wanted.
#include <algorithm>
#include <cmath>

#include "cuda_context.hpp"
#include "kernels.hpp"
#include "launch.cuh"
#include "ops/first_axis.hpp"
#include "ops/random_stream.hpp"  // convert

namespace ndgc::cuda::kernels {
namespace {

using ops::FirstAxis;  // a 1-D parameter view, maybe strided, maybe absent (null data); by value for a launch

struct Sums {
  double a, b;
};

// The block's total of two sums per thread; every thread gets it. A fixed
// tree over kThreads slots: the same additions in the same order each run.
__device__ Sums block_sum(Sums mine) {
  __shared__ double sa[kThreads], sb[kThreads];
  sa[threadIdx.x] = mine.a, sb[threadIdx.x] = mine.b;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (int(threadIdx.x) < width) {
      sa[threadIdx.x] += sa[threadIdx.x + width];
      sb[threadIdx.x] += sb[threadIdx.x + width];
    }
    __syncthreads();
  }
  const Sums total{sa[0], sb[0]};
  __syncthreads();  // the slots are reused by the next call
  return total;
}

// The mean and biased variance of the n elements at(i), i in [0, n), by the block.
template <class F>
__device__ void block_moments(std::int64_t n, F at, double& mean, double& var) {
  double s = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) s += at(i);
  mean = n ? block_sum({s, 0}).a / double(n) : 0;
  double v = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) v += (at(i) - mean) * (at(i) - mean);
  var = n ? block_sum({v, 0}).a / double(n) : 0;
}

// A row's mean and 1 / sqrt(var + eps), as the CPU's row_stats.
template <class T>
__device__ void row_stats(const T* x, std::int64_t n, double eps, double& mean, double& rstd) {
  double var;
  block_moments(n, [x](std::int64_t i) { return double(x[i]); }, mean, var);
  rstd = 1.0 / ::sqrt(var + eps);
}

unsigned blocks(std::int64_t items) { return unsigned(items < 1 ? 1 : items < kMaxBlocks ? items : kMaxBlocks); }

// ---- layer_norm: rows x [R, D] ----------------------------------------------------

template <class T>
__global__ void layer_norm_kernel(const T* x, std::int64_t rows, std::int64_t dim, FirstAxis<T> gamma, FirstAxis<T> beta,
                                  double eps, T* out) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * dim;
    double mean, rstd;
    row_stats(xr, dim, eps, mean, rstd);
    for (std::int64_t d = threadIdx.x; d < dim; d += blockDim.x)
      out[r * dim + d] = T((double(xr[d]) - mean) * rstd) * gamma[d] + beta[d];
  }
}

// Per row: the statistics into stats [R, 2], and dx = rstd (dxhat - mean(dxhat)
// - xhat mean(dxhat xhat)), dxhat = g gamma.
template <class T>
__global__ void layer_norm_rows_backward_kernel(const T* x, const T* g, std::int64_t rows, std::int64_t dim,
                                                FirstAxis<T> gamma, double eps, double* stats, T* dx) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * dim;
    const T* gr = g + r * dim;
    double mean, rstd;
    row_stats(xr, dim, eps, mean, rstd);
    if (threadIdx.x == 0) stats[2 * r] = mean, stats[2 * r + 1] = rstd;
    if (!dx) continue;
    Sums mine{0, 0};
    for (std::int64_t k = threadIdx.x; k < dim; k += blockDim.x) {
      const double dy = double(gr[k]) * double(gamma[k]);
      mine.a += dy;
      mine.b += dy * (double(xr[k]) - mean) * rstd;
    }
    const Sums total = block_sum(mine);
    const double m1 = total.a / double(dim), m2 = total.b / double(dim);
    for (std::int64_t k = threadIdx.x; k < dim; k += blockDim.x) {
      const double xhat = (double(xr[k]) - mean) * rstd;
      dx[r * dim + k] = T(rstd * (double(gr[k]) * double(gamma[k]) - m1 - xhat * m2));
    }
  }
}

// Per column: dgamma = Σ_rows g xhat, dbeta = Σ_rows g, from the row statistics.
template <class T>
__global__ void layer_norm_columns_backward_kernel(const T* x, const T* g, std::int64_t rows, std::int64_t dim,
                                                   const double* stats, T* dgamma, T* dbeta) {
  for (std::int64_t k = blockIdx.x; k < dim; k += gridDim.x) {
    Sums mine{0, 0};
    for (std::int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
      const double gv = double(g[r * dim + k]);
      mine.a += gv * (double(x[r * dim + k]) - stats[2 * r]) * stats[2 * r + 1];
      mine.b += gv;
    }
    const Sums total = block_sum(mine);
    if (threadIdx.x != 0) continue;
    if (dgamma) dgamma[k] = T(total.a);
    if (dbeta) dbeta[k] = T(total.b);
  }
}

// ---- batch_norm: x [N, C, S] ------------------------------------------------------

// Note [Channels in parts]
// A channel of batch_norm holds N·S elements: 200,704 of them for the first
// convolution of `ndgc-train --model cnn` at batch 256. One block per channel
// left most of the GPU idle (32 blocks on an H100's 132 SMs) and spent a
// 64-bit division per element finding it: 0.72 ms for the statistics and
// 1.0 ms for the backward pass of that one layer (ncu). Each channel is now cut
// into parts of whole images, about kPartElements elements each, one block per
// (channel, part). A block walks its part as (image, position) pairs without
// dividing, and writes its partial sums (a fixed tree, in double) to scratch;
// whoever needs a channel's total adds its parts in order. The cut depends on
// the shape alone, so the results are the same bits on every run.
constexpr std::int64_t kPartElements = 16384;

struct Parts {
  std::int64_t n, c, s;
  std::int64_t per;    // images per part
  std::int64_t count;  // parts per channel (at least 1)
  __host__ __device__ std::int64_t blocks() const noexcept { return c * count; }
};

Parts parts_of(std::int64_t n, std::int64_t c, std::int64_t s) {
  const std::int64_t per = s == 0 ? std::max<std::int64_t>(n, 1) : std::max<std::int64_t>(1, kPartElements / s);
  return {n, c, s, per, std::max<std::int64_t>(1, (n + per - 1) / per)};
}

// f(offset) for the elements of part p of channel ch that this thread takes:
// images [p·per, (p + 1)·per) ∩ [0, N), S contiguous elements each.
template <class F>
__device__ void for_part(const Parts& q, std::int64_t ch, std::int64_t p, F f) {
  const std::int64_t first = p * q.per, last = first + q.per < q.n ? first + q.per : q.n;
  const std::int64_t length = (last - first) * q.s;
  if (length <= 0) return;
  const std::int64_t step_images = blockDim.x / q.s, step_positions = blockDim.x % q.s;
  std::int64_t image = first + threadIdx.x / q.s, position = threadIdx.x % q.s;
  for (std::int64_t i = threadIdx.x; i < length; i += blockDim.x) {
    f((image * q.c + ch) * q.s + position);
    image += step_images, position += step_positions;
    if (position >= q.s) position -= q.s, ++image;
  }
}

// The total of a channel's parts, added in part order (any thread may ask).
__device__ inline double channel_total(const double* partial, const Parts& q, std::int64_t ch, int stride = 1,
                                       int which = 0) {
  double t = 0;
  for (std::int64_t p = 0; p < q.count; ++p) t += partial[(ch * q.count + p) * stride + which];
  return t;
}

// The batch-norm kernels take x, g, dx and out as X and the statistics and
// parameters as P: X = P, or a 16-bit X with float32 P (Engine::batch_norm_16,
// Note [Norms in mixed precision] in ops/normalization.cpp), computing as the
// CPU does: sums in double, the affine step in P, X rounded once on store.
template <class X>
__device__ inline double wide(X v) {
  return ops::random::convert<double>(v);
}

// Pass 1 of the statistics: each part's sum of x.
template <class X>
__global__ void batch_norm_sums_kernel(const X* x, Parts q, double* sums) {
  for (std::int64_t b = blockIdx.x; b < q.blocks(); b += gridDim.x) {
    double mine = 0;
    for_part(q, b / q.count, b % q.count, [&](std::int64_t at) { mine += wide(x[at]); });
    const double total = block_sum({mine, 0}).a;
    if (threadIdx.x == 0) sums[b] = total;
  }
}

// Pass 2: each part's sum of squared deviations from the channel's mean.
template <class X>
__global__ void batch_norm_squares_kernel(const X* x, Parts q, const double* sums, double* squares) {
  const double count = double(q.n * q.s);
  for (std::int64_t b = blockIdx.x; b < q.blocks(); b += gridDim.x) {
    const std::int64_t ch = b / q.count;
    const double mean = channel_total(sums, q, ch) / count;
    double mine = 0;
    for_part(q, ch, b % q.count, [&](std::int64_t at) { mine += (wide(x[at]) - mean) * (wide(x[at]) - mean); });
    const double total = block_sum({mine, 0}).a;
    if (threadIdx.x == 0) squares[b] = total;
  }
}

// One thread per channel: the mean and the biased variance.
template <class P>
__global__ void batch_norm_moments_kernel(Parts q, const double* sums, const double* squares, P* mean,
                                          std::int64_t mean_stride, P* var, std::int64_t var_stride) {
  const std::int64_t count = q.n * q.s;
  for (std::int64_t ch = global_index(); ch < q.c; ch += grid_stride()) {
    mean[ch * mean_stride] = P(count ? channel_total(sums, q, ch) / double(count) : 0.0);
    var[ch * var_stride] = P(count ? channel_total(squares, q, ch) / double(count) : 0.0);
  }
}

template <class X, class P>
__global__ void batch_norm_kernel(const X* x, std::int64_t total, std::int64_t c, std::int64_t s, FirstAxis<P> mean,
                                  FirstAxis<P> var, FirstAxis<P> gamma, FirstAxis<P> beta, double eps, X* out) {
  for (std::int64_t e = global_index(); e < total; e += grid_stride()) {
    const std::int64_t ch = e / s % c;
    const double m = double(mean[ch]), rstd = 1.0 / ::sqrt(double(var[ch]) + eps);
    out[e] = X(P(P((wide(x[e]) - m) * rstd) * gamma[ch] + beta[ch]));
  }
}

// Per channel, M = N·S: dbeta = Σ g, dgamma = Σ g xhat; training: dx = gamma
// rstd (g - dbeta / M - xhat dgamma / M); not training: dx = g gamma rstd.
// Pass 1: each part's Σ g and Σ g xhat, as sums[2b] and sums[2b + 1].
template <class X, class P>
__global__ void batch_norm_backward_sums_kernel(const X* x, const X* g, Parts q, FirstAxis<P> mean, FirstAxis<P> var,
                                                double eps, double* sums) {
  for (std::int64_t b = blockIdx.x; b < q.blocks(); b += gridDim.x) {
    const std::int64_t ch = b / q.count;
    const double m = double(mean[ch]), rstd = 1.0 / ::sqrt(double(var[ch]) + eps);
    Sums mine{0, 0};
    for_part(q, ch, b % q.count, [&](std::int64_t at) {
      mine.a += wide(g[at]);
      mine.b += wide(g[at]) * (wide(x[at]) - m) * rstd;
    });
    const Sums total = block_sum(mine);
    if (threadIdx.x == 0) sums[2 * b] = total.a, sums[2 * b + 1] = total.b;
  }
}

// Pass 2: the channel's totals from its parts; dgamma and dbeta by part 0's
// block, dx by every part's.
template <class X, class P>
__global__ void batch_norm_backward_kernel(const X* x, const X* g, Parts q, FirstAxis<P> mean, FirstAxis<P> var,
                                           FirstAxis<P> gamma, double eps, bool training, const double* sums, X* dx,
                                           P* dgamma, P* dbeta) {
  const double m_count = double(q.n * q.s);
  for (std::int64_t b = blockIdx.x; b < q.blocks(); b += gridDim.x) {
    const std::int64_t ch = b / q.count, part = b % q.count;
    const double sg = channel_total(sums, q, ch, 2, 0), sgx = channel_total(sums, q, ch, 2, 1);
    if (part == 0 && threadIdx.x == 0) {
      if (dgamma) dgamma[ch] = P(sgx);
      if (dbeta) dbeta[ch] = P(sg);
    }
    if (!dx) continue;
    const double m = double(mean[ch]), rstd = 1.0 / ::sqrt(double(var[ch]) + eps);
    const double scale = double(gamma[ch]) * rstd;
    for_part(q, ch, part, [&](std::int64_t at) {
      if (training) {
        const double xhat = (wide(x[at]) - m) * rstd;
        dx[at] = X(P(scale * (wide(g[at]) - sg / m_count - xhat * sgx / m_count)));
      } else {
        dx[at] = X(P(scale * wide(g[at])));
      }
    });
  }
}

template <class F>
void floating(DataType t, F&& f) {
  if (t == DataType::float64) f(double{});
  else f(float{});
}

// f(X{}, P{}): x's type and the parameters' (batch_norm_16: a 16-bit x with float32 parameters).
template <class F>
void norm_types(DataType x, F&& f) {
  if (x == DataType::bfloat16) return f(bfloat16{}, float{});
  if (x == DataType::float16) return f(float16{}, float{});
  floating(x, [&](auto tag) { f(tag, tag); });
}

}  // namespace

void layer_norm(const TensorView& x, const TensorView& gamma, const TensorView& beta, double eps,
                const TensorView& out, cudaStream_t stream) {
  const std::int64_t rows = x.shape[0], dim = x.shape[1];
  if (rows == 0 || dim == 0) return;
  floating(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    layer_norm_kernel<T><<<blocks(rows), kThreads, 0, stream>>>(static_cast<const T*>(x.data), rows, dim,
                                                                 FirstAxis<T>(gamma), FirstAxis<T>(beta), eps,
                                                                 static_cast<T*>(out.data));
  });
  CUDA_CHECK_LAUNCH();
}

void layer_norm_backward(const TensorView& x, const TensorView& gamma, const TensorView& g, double eps,
                         const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta, int device,
                         cudaStream_t stream) {
  const std::int64_t rows = x.shape[0], dim = x.shape[1];
  if (rows == 0 || dim == 0) return;
  DeviceScratch stats(device, std::size_t(rows) * 2 * sizeof(double));  // freed stream-ordered
  auto* st = static_cast<double*>(stats.get());
  floating(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = static_cast<const T*>(x.data);
    const T* gp = static_cast<const T*>(g.data);
    layer_norm_rows_backward_kernel<T><<<blocks(rows), kThreads, 0, stream>>>(xp, gp, rows, dim, FirstAxis<T>(gamma), eps,
                                                                               st, static_cast<T*>(dx.data));
    CUDA_CHECK_LAUNCH();
    if (!dgamma.data && !dbeta.data) return;
    layer_norm_columns_backward_kernel<T><<<blocks(dim), kThreads, 0, stream>>>(
        xp, gp, rows, dim, st, static_cast<T*>(dgamma.data), static_cast<T*>(dbeta.data));
    CUDA_CHECK_LAUNCH();
  });
}

void batch_norm_stats(const TensorView& x, const TensorView& mean, const TensorView& var, int device,
                      cudaStream_t stream) {
  const std::int64_t n = x.shape[0], c = x.shape[1], s = x.shape[2];
  if (c == 0) return;
  const Parts q = parts_of(n, c, s);
  DeviceScratch scratch(device, std::size_t(2 * q.blocks()) * sizeof(double));  // freed stream-ordered
  auto* sums = static_cast<double*>(scratch.get());
  double* squares = sums + q.blocks();
  norm_types(x.dtype, [&](auto xtag, auto ptag) {
    using X = decltype(xtag);
    using P = decltype(ptag);
    const X* xp = static_cast<const X*>(x.data);
    batch_norm_sums_kernel<X><<<blocks(q.blocks()), kThreads, 0, stream>>>(xp, q, sums);
    CUDA_CHECK_LAUNCH();
    batch_norm_squares_kernel<X><<<blocks(q.blocks()), kThreads, 0, stream>>>(xp, q, sums, squares);
    CUDA_CHECK_LAUNCH();
    batch_norm_moments_kernel<P><<<blocks_for(c), kThreads, 0, stream>>>(
        q, sums, squares, static_cast<P*>(mean.data), mean.rank ? mean.strides[0] : 0, static_cast<P*>(var.data),
        var.rank ? var.strides[0] : 0);
    CUDA_CHECK_LAUNCH();
  });
}

void batch_norm(const TensorView& x, const TensorView& mean, const TensorView& var, const TensorView& gamma,
                const TensorView& beta, double eps, const TensorView& out, cudaStream_t stream) {
  const std::int64_t total = x.size(), c = x.shape[1], s = x.shape[2];
  if (total == 0) return;
  norm_types(x.dtype, [&](auto xtag, auto ptag) {
    using X = decltype(xtag);
    using P = decltype(ptag);
    batch_norm_kernel<X, P><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const X*>(x.data), total, c, s, FirstAxis<P>(mean), FirstAxis<P>(var), FirstAxis<P>(gamma),
        FirstAxis<P>(beta), eps, static_cast<X*>(out.data));
  });
  CUDA_CHECK_LAUNCH();
}

void batch_norm_backward(const TensorView& x, const TensorView& mean, const TensorView& var,
                         const TensorView& gamma, const TensorView& g, double eps, bool training,
                         const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta, int device,
                         cudaStream_t stream) {
  const std::int64_t n = x.shape[0], c = x.shape[1], s = x.shape[2];
  if (c == 0) return;
  const Parts q = parts_of(n, c, s);
  DeviceScratch scratch(device, std::size_t(2 * q.blocks()) * sizeof(double));  // freed stream-ordered
  auto* sums = static_cast<double*>(scratch.get());
  norm_types(x.dtype, [&](auto xtag, auto ptag) {
    using X = decltype(xtag);
    using P = decltype(ptag);
    const X* xp = static_cast<const X*>(x.data);
    const X* gp = static_cast<const X*>(g.data);
    batch_norm_backward_sums_kernel<X, P><<<blocks(q.blocks()), kThreads, 0, stream>>>(
        xp, gp, q, FirstAxis<P>(mean), FirstAxis<P>(var), eps, sums);
    CUDA_CHECK_LAUNCH();
    batch_norm_backward_kernel<X, P><<<blocks(q.blocks()), kThreads, 0, stream>>>(
        xp, gp, q, FirstAxis<P>(mean), FirstAxis<P>(var), FirstAxis<P>(gamma), eps, training, sums,
        static_cast<X*>(dx.data), static_cast<P*>(dgamma.data), static_cast<P*>(dbeta.data));
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace ndgc::cuda::kernels
