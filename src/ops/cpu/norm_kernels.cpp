// CPU kernels of layer_norm and batch_norm (forward, statistics, backward).
//
// Statistics are two-pass (mean, then the mean of squared deviations),
// accumulated in double whatever the dtype, in Lanes. Each reduction runs whole inside
// one piece of a parallel_for (a row of layer_norm, a channel of
// batch_norm), in a fixed order, so results are the same bits for any split.
// batch_norm's channel sums (hundreds of thousands of values) run in Lanes:
// eight interleaved partial sums, so the additions are independent rather
// than one chain of 4-cycle dependent adds.
// batch_norm's element loops (the forward, and dx) run per plane row with
// the channel's constants hoisted, vectorised by `omp simd` (the file is
// built with -fopenmp-simd, no OpenMP runtime).
// Parameter vectors ([D] or [C]) may be strided views; x, g and the outputs
// are contiguous (the ops layer and autograd see to it).
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "ops/cpu/cpu_engine.hpp"
#include "ops/cpu/half_convert.hpp"
#include "ops/cpu/layer_dispatch.hpp"

namespace ndgc::ops::cpu {

namespace {

template <class T>
struct Vec {  // a 1-D parameter view, maybe strided, maybe absent (null data)
  const T* data;
  std::int64_t stride;
  explicit Vec(const TensorView& v) : data(static_cast<const T*>(v.data)), stride(v.rank ? v.strides[0] : 0) {}
  T operator[](std::int64_t i) const { return data[i * stride]; }
};

// Sums of a channel's values: element j of each plane row goes to partial
// sum j % 8, and total() adds the eight in a fixed tree, so the order is a
// function of the shape alone.
struct Lanes {
  static constexpr int kLanes = 8;
  double v[kLanes] = {};
  // Adds f(j) for j in [0, s).
  template <class F>
  void add_row(std::int64_t s, F&& f) {
    std::int64_t j = 0;
    for (; j + kLanes <= s; j += kLanes)
      for (int k = 0; k < kLanes; ++k) v[k] += f(j + k);
    for (int k = 0; j < s; ++j, ++k) v[k] += f(j);
  }
  double total() const { return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])); }
};

// Note [Norms over widened rows]
// A 16-bit value's conversion (a bit-twiddle with a NaN test) kept the
// batch norms' element loops scalar: in a bfloat16 CNN step they took a
// fifth of the time. So a 16-bit x or g is widened a plane row at a time
// into a thread buffer of float32 (exact), the loops read floats, and a
// 16-bit result is computed into a float buffer and narrowed once, to
// nearest even, by half_convert.cpp's vectorised conversions. Each element
// sees the same arithmetic as before, so the bits do not change. The three
// buffers are the thread's, a plane row each (3 KiB for a 28 x 28 image),
// kept until the thread ends and outside the allocator's accounting, as the
// oneDNN kernels' buffers are.
template <class T>
constexpr bool kHalf = std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;
template <class T>
using Wide = std::conditional_t<kHalf<T>, float, T>;

// A thread's row buffers, grown to the longest row.
struct RowBuffers {
  std::vector<float> x, g, out;
};
RowBuffers& row_buffers() {
  thread_local RowBuffers buffers;
  return buffers;
}

// `row` as the loops read it: itself, or widened into `buffer`.
template <class T>
const Wide<T>* widened(const T* row, std::int64_t n, std::vector<float>& buffer) {
  if constexpr (!kHalf<T>) {
    return row;
  } else {
    if (buffer.size() < std::size_t(n)) buffer.resize(std::size_t(n));
    widen_half(row, buffer.data(), n);
    return buffer.data();
  }
}

// out[j] = T(value(j)) for j in [0, n), value(j) of type Wide<T>: computed
// into `buffer` and narrowed for a 16-bit T.
template <class T, class F>
void store_row(T* out, std::int64_t n, std::vector<float>& buffer, F&& value) {
  if constexpr (!kHalf<T>) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) out[j] = value(j);
  } else {
    if (buffer.size() < std::size_t(n)) buffer.resize(std::size_t(n));
    float* b = buffer.data();
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) b[j] = value(j);
    narrow_half(b, out, n);
  }
}

// A row's mean and 1 / sqrt(var + eps), each sum in Lanes (independent
// additions the compiler vectorises, in an order fixed by the row's length).
template <class T>
void row_stats(const T* x, std::int64_t n, double eps, double& mean, double& rstd) {
  Lanes sum;
  sum.add_row(n, [&](std::int64_t i) { return double(x[i]); });
  mean = n ? sum.total() / double(n) : 0;
  Lanes squares;
  squares.add_row(n, [&](std::int64_t i) { return (double(x[i]) - mean) * (double(x[i]) - mean); });
  rstd = 1.0 / std::sqrt((n ? squares.total() / double(n) : 0) + eps);
}

// batch_norm's storage type S (x, g, dx, out) and parameter type P (mean,
// var, gamma, beta): float/float, double/double, and float16 or bfloat16
// with float32 parameters (Note [Norms in mixed precision] in
// ops/normalization.cpp). Arithmetic is P's (and double for the sums); a
// 16-bit result is P's rounded once, the bits the widened float32 kernel
// would give, without its float32 copies of x, g and dx.
template <class F>
void norm_types(const TensorView& x, const TensorView& params, const char* kernel, F&& f) {
  if (x.dtype == DataType::bfloat16 && params.dtype == DataType::float32) return f(bfloat16{}, float{});
  if (x.dtype == DataType::float16 && params.dtype == DataType::float32) return f(float16{}, float{});
  floating(x.dtype, kernel, [&](auto tag) { f(tag, tag); });
}

}  // namespace

void CpuEngine::layer_norm(const TensorView& x, const TensorView& gamma, const TensorView& beta, double eps,
                           const TensorView& out) {
  const std::int64_t rows = x.shape[0], dim = x.shape[1];
  floating(x.dtype, "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.data);
    T* o = static_cast<T*>(out.data);
    const Vec<T> ga(gamma), be(beta);
    support::parallel_for(rows, grain_for(3 * dim), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t r = lo; r < hi; ++r) {
        double mean, rstd;
        row_stats(in + r * dim, dim, eps, mean, rstd);
        const T* row = in + r * dim;
        T* dst = o + r * dim;
        if (ga.stride == 1 && be.stride == 1) {  // the usual case: a vector loop
          const T *gp = ga.data, *bp = be.data;
#pragma omp simd
          for (std::int64_t d = 0; d < dim; ++d) dst[d] = T((double(row[d]) - mean) * rstd) * gp[d] + bp[d];
        } else {
          for (std::int64_t d = 0; d < dim; ++d) dst[d] = T((double(row[d]) - mean) * rstd) * ga[d] + be[d];
        }
      }
    });
  });
}

// dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), dxhat = g gamma;
// dgamma = Σ_rows g xhat, dbeta = Σ_rows g (a second pass over columns,
// from the row statistics of the first).
void CpuEngine::layer_norm_backward(const TensorView& x, const TensorView& gamma, const TensorView& g, double eps,
                                    const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta) {
  const std::int64_t rows = x.shape[0], dim = x.shape[1];
  Scratch stats(contiguous_view(nullptr, DataType::float64, Shape{rows, 2}));
  double* st = static_cast<double*>(stats.view().data);
  floating(x.dtype, "layer_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.data);
    const T* gin = static_cast<const T*>(g.data);
    const Vec<T> ga(gamma);
    T* d = static_cast<T*>(dx.data);
    support::parallel_for(rows, grain_for(5 * dim), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t r = lo; r < hi; ++r) {
        const T* xr = in + r * dim;
        const T* gr = gin + r * dim;
        double mean, rstd;
        row_stats(xr, dim, eps, mean, rstd);
        st[2 * r] = mean, st[2 * r + 1] = rstd;
        if (!d) continue;
        double sum_dy = 0, sum_dy_xhat = 0;
        for (std::int64_t k = 0; k < dim; ++k) {
          const double dy = double(gr[k]) * double(ga[k]);
          sum_dy += dy;
          sum_dy_xhat += dy * (double(xr[k]) - mean) * rstd;
        }
        const double m1 = sum_dy / double(dim), m2 = sum_dy_xhat / double(dim);
        for (std::int64_t k = 0; k < dim; ++k) {
          const double xhat = (double(xr[k]) - mean) * rstd;
          d[r * dim + k] = T(rstd * (double(gr[k]) * double(ga[k]) - m1 - xhat * m2));
        }
      }
    });
    T* dg = static_cast<T*>(dgamma.data);
    T* db = static_cast<T*>(dbeta.data);
    if (!dg && !db) return;
    support::parallel_for(dim, grain_for(2 * rows), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t k = lo; k < hi; ++k) {
        double sg = 0, sb = 0;
        for (std::int64_t r = 0; r < rows; ++r) {
          const double gv = double(gin[r * dim + k]);
          sb += gv;
          sg += gv * (double(in[r * dim + k]) - st[2 * r]) * st[2 * r + 1];
        }
        if (dg) dg[k] = T(sg);
        if (db) db[k] = T(sb);
      }
    });
  });
}

void CpuEngine::batch_norm_stats(const TensorView& x, const TensorView& mean, const TensorView& var) {
  const std::int64_t n = x.shape[0], c = x.shape[1], s = x.shape[2];
  norm_types(x, mean, "batch_norm_stats", [&](auto stag, auto ptag) {
    using T = decltype(stag);
    using P = decltype(ptag);
    const T* in = static_cast<const T*>(x.data);
    P* mo = static_cast<P*>(mean.data);
    P* vo = static_cast<P*>(var.data);
    support::parallel_for(c, grain_for(2 * n * s), [&](std::int64_t lo, std::int64_t hi) {
      RowBuffers& buffers = row_buffers();
      for (std::int64_t ch = lo; ch < hi; ++ch) {
        Lanes sum;
        for (std::int64_t i = 0; i < n; ++i) {
          const Wide<T>* row = widened(in + (i * c + ch) * s, s, buffers.x);
          sum.add_row(s, [row](std::int64_t j) { return double(row[j]); });
        }
        const double m = n * s > 0 ? sum.total() / double(n * s) : 0;
        Lanes squares;
        for (std::int64_t i = 0; i < n; ++i) {
          const Wide<T>* row = widened(in + (i * c + ch) * s, s, buffers.x);
          squares.add_row(s, [row, m](std::int64_t j) {
            const double dev = double(row[j]) - m;
            return dev * dev;
          });
        }
        mo[ch * mean.strides[0]] = P(m);
        vo[ch * var.strides[0]] = P(n * s > 0 ? squares.total() / double(n * s) : 0);
      }
    });
  });
}

void CpuEngine::batch_norm(const TensorView& x, const TensorView& mean, const TensorView& var,
                           const TensorView& gamma, const TensorView& beta, double eps, const TensorView& out) {
  const std::int64_t c = x.shape[1], s = x.shape[2], planes = x.shape[0] * c;
  norm_types(x, gamma, "batch_norm", [&](auto stag, auto ptag) {
    using T = decltype(stag);
    using P = decltype(ptag);
    const T* in = static_cast<const T*>(x.data);
    T* o = static_cast<T*>(out.data);
    const Vec<P> mv(mean), vv(var), ga(gamma), be(beta);
    support::parallel_for(planes, grain_for(s), [&](std::int64_t lo, std::int64_t hi) {
      RowBuffers& buffers = row_buffers();
      for (std::int64_t p = lo; p < hi; ++p) {
        const std::int64_t ch = p % c;
        const double m = double(mv[ch]), rstd = 1.0 / std::sqrt(double(vv[ch]) + eps);
        const P scale = ga[ch], shift = be[ch];
        const Wide<T>* row = widened(in + p * s, s, buffers.x);
        store_row(o + p * s, s, buffers.out, [&](std::int64_t j) { return P((double(row[j]) - m) * rstd) * scale + shift; });
      }
    });
  });
}

// Per channel, M = N·S: dbeta = Σ g, dgamma = Σ g xhat; training: dx = gamma
// rstd (g - dbeta / M - xhat dgamma / M); not training (constant
// statistics): dx = g gamma rstd.
void CpuEngine::batch_norm_backward(const TensorView& x, const TensorView& mean, const TensorView& var,
                                    const TensorView& gamma, const TensorView& g, double eps, bool training,
                                    const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta) {
  const std::int64_t n = x.shape[0], c = x.shape[1], s = x.shape[2];
  norm_types(x, gamma, "batch_norm_backward", [&](auto stag, auto ptag) {
    using T = decltype(stag);
    using P = decltype(ptag);
    const T* in = static_cast<const T*>(x.data);
    const T* gin = static_cast<const T*>(g.data);
    const Vec<P> mv(mean), vv(var), ga(gamma);
    T* d = static_cast<T*>(dx.data);
    P* dg = static_cast<P*>(dgamma.data);
    P* db = static_cast<P*>(dbeta.data);
    const double count = double(n * s);
    support::parallel_for(c, grain_for(3 * n * s), [&](std::int64_t lo, std::int64_t hi) {
      RowBuffers& buffers = row_buffers();
      for (std::int64_t ch = lo; ch < hi; ++ch) {
        const double m = double(mv[ch]), rstd = 1.0 / std::sqrt(double(vv[ch]) + eps);
        Lanes lg, lgx;
        for (std::int64_t i = 0; i < n; ++i) {
          const Wide<T>* grow = widened(gin + (i * c + ch) * s, s, buffers.g);
          const Wide<T>* xrow = widened(in + (i * c + ch) * s, s, buffers.x);
          lg.add_row(s, [grow](std::int64_t j) { return double(grow[j]); });
          lgx.add_row(s, [grow, xrow, m, rstd](std::int64_t j) {
            return double(grow[j]) * (double(xrow[j]) - m) * rstd;
          });
        }
        const double sg = lg.total(), sgx = lgx.total();
        if (dg) dg[ch] = P(sgx);
        if (db) db[ch] = P(sg);
        if (!d) continue;
        const double scale = double(ga[ch]) * rstd, mean_g = sg / count, mean_gx = sgx / count;
        for (std::int64_t i = 0; i < n; ++i) {
          const Wide<T>* grow = widened(gin + (i * c + ch) * s, s, buffers.g);
          T* drow = d + (i * c + ch) * s;
          if (training) {
            const Wide<T>* xrow = widened(in + (i * c + ch) * s, s, buffers.x);
            store_row(drow, s, buffers.out, [&](std::int64_t j) {
              return P(scale * ((double(grow[j]) - mean_g) - (double(xrow[j]) - m) * rstd * mean_gx));
            });
          } else {
            store_row(drow, s, buffers.out, [&](std::int64_t j) { return P(scale * double(grow[j])); });
          }
        }
      }
    });
  });
}

}  // namespace ndgc::ops::cpu
