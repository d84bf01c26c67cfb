// CPU kernels of the 2-D pools: pool2d and its backward.
//
// The index maths is ops/conv_math.hpp's (shared with the CUDA engine). The
// work is split over (n, c) image planes: each piece writes only its own
// planes and adds in a fixed order, so results are the same bits for any
// split.
//
// Note [Pools of 2x2 windows at stride 2]
// The pool of almost every CNN has a 2x2 kernel, stride 2 and no padding.
// The general loops pick a window's maximum with branches that the data
// decides, which the predictor often gets wrong, and the backward pass
// zeroes dx and then scatters into it: at batch 32 the two pools of
// `ndgc-train --model cnn` took 17 % of a training step that way. For this
// window the maximum is three maxss and its tap a sum of comparison flags,
// with no branch but one that is taken only for a window holding a NaN; and
// since the windows tile the plane without overlapping, the backward pass
// writes dx window by window, with no zeroing pass before a scatter.
// Vectorising along a row of windows (`omp simd`) was measured first and
// lost: the rows of a 28x28 or 14x14 feature map are 14 or 7 windows,
// shorter than one AVX-512 vector, so the work fell to the loop's scalar
// remainder, which keeps the branches (perf/RESULTS.md, Layer models,
// "Fifth pass"). The fast path gives the same bits as the general one
// (tests/ops/pooling_test.cpp checks them against each other): the window's
// first NaN, else its first maximum (conv::max_position); the average adds
// from 0 in tap order; a gradient lands as 0 + g, as the scatter adds it. It
// needs the input's rows contiguous (the last stride 1); other views take
// the general loops.
#include <optional>

#include "ops/conv_math.hpp"
#include "ops/cpu/cpu_engine.hpp"
#include "ops/cpu/layer_dispatch.hpp"

namespace ndgc::ops::cpu {
namespace {

// Whether the pool takes the 2x2 fast path of Note [Pools of 2x2 windows at stride 2].
bool tiles_2x2(const Window2d& w, std::int64_t last_stride) {
  return w.kernel[0] == 2 && w.kernel[1] == 2 && w.stride[0] == 2 && w.stride[1] == 2 && w.padding[0] == 0 &&
         w.padding[1] == 0 && w.dilation[0] == 1 && w.dilation[1] == 1 && last_stride == 1;
}

// The tap of the window (a b / c d) that conv::max_position picks when
// none is NaN: 0 a, 1 b, 2 c, 3 d, the first equal to the maximum. The
// maximum comes from `x > y ? x : y`, one maxss; the tap from flags added
// up, not from branches.
template <class T>
inline int first_max_2x2(T a, T b, T c, T d, T& best) {
  best = b > a ? b : a;
  best = c > best ? c : best;
  best = d > best ? d : best;
  const int not_a = a != best, not_ab = not_a & (b != best), not_abc = not_ab & (c != best);
  return not_a + not_ab + not_abc;
}

template <class T>
inline bool any_nan(T a, T b, T c, T d) {
  return __builtin_isunordered(a, b) | __builtin_isunordered(c, d);
}

// One row of 2x2 windows: top input row r0, bottom r1, `ow` outputs. A
// window that holds a NaN (never, in a healthy network) takes the general
// function, through a branch that is otherwise always predicted right.
template <class T>
void pool_row_2x2(bool max, const T* r0, const T* r1, const Window2d& w, T* out, std::int64_t ow) {
  if (!max) {
    for (std::int64_t ox = 0; ox < ow; ++ox)
      out[ox] = (((T(0) + r0[2 * ox]) + r0[2 * ox + 1]) + r1[2 * ox] + r1[2 * ox + 1]) / T(4);
    return;
  }
  for (std::int64_t ox = 0; ox < ow; ++ox) {
    const T a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
    if (any_nan(a, b, c, d)) [[unlikely]]
      out[ox] = r0[2 * ox + conv::inner_max_offset(r0 + 2 * ox, r1 - r0, 1, w)];
    else
      first_max_2x2(a, b, c, d, out[ox]);
  }
}

// The gradient of one row of 2x2 windows into the dx rows d0 (top) and d1 =
// d0 + wd (bottom), columns [0, 2 ow): 0 + g on the winner (as the general
// loop's scatter adds it) and 0 elsewhere.
template <class T>
void pool_row_2x2_backward(bool max, const T* r0, const T* r1, const T* g, const Window2d& w, T* d0,
                           std::int64_t wd, std::int64_t ow) {
  T* d1 = d0 + wd;
  if (!max) {
    for (std::int64_t ox = 0; ox < ow; ++ox) {
      const T share = T(0) + g[ox] / T(4);
      d0[2 * ox] = share, d0[2 * ox + 1] = share, d1[2 * ox] = share, d1[2 * ox + 1] = share;
    }
    return;
  }
  const std::int64_t sh = r1 - r0, offset[4] = {0, 1, wd, wd + 1};  // of taps a, b, c, d in dx
  for (std::int64_t ox = 0; ox < ow; ++ox) {
    const T a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
    d0[2 * ox] = d0[2 * ox + 1] = d1[2 * ox] = d1[2 * ox + 1] = T(0);
    std::int64_t at;
    if (any_nan(a, b, c, d)) [[unlikely]] {
      at = conv::inner_max_offset(r0 + 2 * ox, sh, 1, w);
      at = at >= sh ? wd + (at - sh) : at;  // x's row offset to dx's
    } else {
      T best;
      at = offset[first_max_2x2(a, b, c, d, best)];
    }
    d0[2 * ox + at] = T(0) + g[ox];
  }
}

}  // namespace

void CpuEngine::pool2d(bool max, const TensorView& x, const Window2d& w, const TensorView& out) {
  const std::int64_t c = x.shape[1], h = x.shape[2], wd = x.shape[3], oh = out.shape[2], ow = out.shape[3];
  const std::int64_t planes = x.shape[0] * c, taps = w.kernel[0] * w.kernel[1];
  const std::int64_t sh = x.strides[2], sw = x.strides[3];
  const bool tiles = tiles_2x2(w, sw);
  // Without padding every window lies inside the input (conv::out_size), so
  // the inner_ functions serve them without bounds checks.
  const bool inner = w.padding[0] == 0 && w.padding[1] == 0;
  floating(x.dtype, "pool2d", [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.data);
    T* o = static_cast<T*>(out.data);
    support::parallel_for(planes, grain_for(oh * ow * taps), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t p = lo; p < hi; ++p) {
        const T* plane = in + p / c * x.strides[0] + p % c * x.strides[1];
        T* dst = o + p * oh * ow;
        if (tiles) {
          for (std::int64_t oy = 0; oy < oh; ++oy)
            pool_row_2x2(max, plane + 2 * oy * sh, plane + (2 * oy + 1) * sh, w, dst + oy * ow, ow);
          continue;
        }
        for (std::int64_t oy = 0; oy < oh; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            T& r = dst[oy * ow + ox];
            if (inner) {
              const T* win = plane + oy * w.stride[0] * sh + ox * w.stride[1] * sw;
              r = max ? win[conv::inner_max_offset(win, sh, sw, w)] : conv::inner_window_sum(win, sh, sw, w) / T(taps);
            } else if (max) {
              const std::int64_t at = conv::max_position(plane, sh, sw, h, wd, w, oy, ox);
              r = plane[at / wd * sh + at % wd * sw];
            } else {
              r = conv::window_sum(plane, sh, sw, h, wd, w, oy, ox) / T(taps);
            }
          }
      }
    });
  });
}

void CpuEngine::pool2d_backward(bool max, const TensorView& x, const TensorView& g, const Window2d& w,
                                const TensorView& dx) {
  const std::int64_t c = x.shape[1], h = x.shape[2], wd = x.shape[3], oh = g.shape[2], ow = g.shape[3];
  const std::int64_t planes = x.shape[0] * c, taps = w.kernel[0] * w.kernel[1];
  std::optional<Scratch> keep;
  const TensorView& gc = contiguous_or_copy(g, keep);
  const bool tiles = tiles_2x2(w, x.strides[3]);
  // No padding and contiguous rows: a window's offsets in x are its offsets in dx.
  const bool rows_inner = w.padding[0] == 0 && w.padding[1] == 0 && x.strides[3] == 1 && x.strides[2] == wd;
  floating(x.dtype, "pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.data);
    const T* gin = static_cast<const T*>(gc.data);
    T* d = static_cast<T*>(dx.data);
    support::parallel_for(planes, grain_for(oh * ow * taps), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t p = lo; p < hi; ++p) {
        const T* plane = in + p / c * x.strides[0] + p % c * x.strides[1];
        const T* gp = gin + p * oh * ow;
        T* dp = d + p * h * wd;
        if (tiles) {  // the windows' pixels row by row, then zeros where no window reaches
          const std::int64_t sh = x.strides[2];
          for (std::int64_t oy = 0; oy < oh; ++oy) {
            T* d0 = dp + 2 * oy * wd;
            pool_row_2x2_backward(max, plane + 2 * oy * sh, plane + (2 * oy + 1) * sh, gp + oy * ow, w, d0, wd, ow);
            for (std::int64_t ix = 2 * ow; ix < wd; ++ix) d0[ix] = d0[wd + ix] = T(0);
          }
          for (std::int64_t i = 2 * oh * wd; i < h * wd; ++i) dp[i] = T(0);
          continue;
        }
        for (std::int64_t i = 0; i < h * wd; ++i) dp[i] = T(0);
        for (std::int64_t oy = 0; oy < oh; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            const T gv = gp[oy * ow + ox];
            if (max && rows_inner) {
              const std::int64_t start = oy * w.stride[0] * wd + ox * w.stride[1];
              dp[start + conv::inner_max_offset(plane + start, wd, 1, w)] += gv;
              continue;
            }
            if (max) {
              dp[conv::max_position(plane, x.strides[2], x.strides[3], h, wd, w, oy, ox)] += gv;
              continue;
            }
            const T share = gv / T(taps);
            for (std::int64_t ky = 0; ky < w.kernel[0]; ++ky) {
              const std::int64_t iy = conv::source(w, 0, oy, ky);
              if (iy < 0 || iy >= h) continue;
              for (std::int64_t kx = 0; kx < w.kernel[1]; ++kx) {
                const std::int64_t ix = conv::source(w, 1, ox, kx);
                if (ix >= 0 && ix < wd) dp[iy * wd + ix] += share;
              }
            }
          }
      }
    });
  });
}

}  // namespace ndgc::ops::cpu
