// CPU kernels of the 2-D pools: pool2d and its backward.
//
// The index maths is ops/conv_math.hpp's (shared with the CUDA engine). The
// work is split over (n, c) image planes: each piece writes only its own
// planes and adds in a fixed order, so results are the same bits for any
// split.
//
// Note [Pools of 2x2 windows at stride 2]
// The max-pool of almost every CNN has a 2x2 kernel, stride 2 and no
// padding. The general loops pick a window's maximum with branches that the
// data decides, which the predictor often gets wrong, and the backward pass
// zeroes dx and then scatters into it: at batch 32 the two pools of
// `ndgc-train --model cnn` took 17 % of a training step that way. For this
// window max_2x2 picks the winner without a branch on the data, and since
// the windows tile the plane without overlapping, the backward pass writes
// dx window by window, with no zeroing pass before a scatter. Vectorising
// along a row of windows (`omp simd`) was measured first and lost: the rows
// of a 28x28 or 14x14 feature map are 14 or 7 windows, shorter than one
// AVX-512 vector, so the work fell to the loop's scalar remainder, which
// keeps the branches (perf/RESULTS.md, Layer models, "Fifth pass"). The fast
// path gives the same bits as the general one (tests/ops/pooling_test.cpp
// checks them against each other): the window's first NaN, else its first
// maximum (conv::max_position), and a gradient that lands as 0 + g. It needs
// the input's rows contiguous (the last stride 1); other views, and the
// average pool, whose loops have no branch on the data, take the general
// loops.
#include <optional>

#include "ops/conv_math.hpp"
#include "ops/cpu/cpu_engine.hpp"
#include "ops/cpu/layer_dispatch.hpp"

namespace ndgc::ops::cpu {
namespace {

// Whether a max-pool takes the fast path of Note [Pools of 2x2 windows at stride 2].
bool tiles_2x2(bool max, const Window2d& w, std::int64_t last_stride) {
  return max && w.kernel[0] == 2 && w.kernel[1] == 2 && w.stride[0] == 2 && w.stride[1] == 2 &&
         w.padding[0] == 0 && w.padding[1] == 0 && w.dilation[0] == 1 && w.dilation[1] == 1 && last_stride == 1;
}

// The window whose top-left input is `top` (rows sh apart) as
// conv::max_position picks it: returns its tap (0 top-left, 1 top-right, 2
// bottom-left, 3 bottom-right) and sets `best` to its value. Without a NaN
// the maximum is `x > y ? x : y` three times, one maxss each, and the tap
// (the first equal to the maximum) a sum of comparison flags: no branch on
// the data. A window that holds a NaN (never, in a healthy network) takes
// the general function, through a branch that is otherwise always
// predicted right.
template <class T>
inline int max_2x2(const T* top, std::int64_t sh, const Window2d& w, T& best) {
  const T a = top[0], b = top[1], c = top[sh], d = top[sh + 1];
  if (__builtin_isunordered(a, b) | __builtin_isunordered(c, d)) [[unlikely]] {
    const std::int64_t at = conv::inner_max_offset(top, sh, 1, w);
    best = top[at];
    return at >= sh ? 2 + int(at - sh) : int(at);
  }
  best = b > a ? b : a;
  best = c > best ? c : best;
  best = d > best ? d : best;
  const int not_a = a != best, not_ab = not_a & (b != best), not_abc = not_ab & (c != best);
  return not_a + not_ab + not_abc;
}

}  // namespace

void CpuEngine::pool2d(bool max, const TensorView& x, const Window2d& w, const TensorView& out) {
  const std::int64_t c = x.shape[1], h = x.shape[2], wd = x.shape[3], oh = out.shape[2], ow = out.shape[3];
  const std::int64_t planes = x.shape[0] * c, taps = w.kernel[0] * w.kernel[1];
  const std::int64_t sh = x.strides[2], sw = x.strides[3];
  const bool tiles = tiles_2x2(max, w, sw);
  // The windows that lie wholly inside the input (all of them without
  // padding: conv::out_size) are served by the inner_ functions without
  // bounds checks, the same taps in the same order as the checked ones.
  std::int64_t inside[2][2];  // per axis: [lo, hi) of output positions
  for (int a = 0; a < 2; ++a) {
    std::int64_t unused;
    const std::int64_t size = a == 0 ? h : wd, o_size = a == 0 ? oh : ow;
    conv::inside_run(w, a, 0, size, o_size, inside[a][0], unused);
    conv::inside_run(w, a, w.kernel[a] - 1, size, o_size, unused, inside[a][1]);
    inside[a][1] = std::max(inside[a][1], inside[a][0]);
  }
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
            for (std::int64_t ox = 0; ox < ow; ++ox) max_2x2(plane + 2 * oy * sh + 2 * ox, sh, w, dst[oy * ow + ox]);
          continue;
        }
        for (std::int64_t oy = 0; oy < oh; ++oy) {
          const bool row_inside = oy >= inside[0][0] && oy < inside[0][1];
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            T& r = dst[oy * ow + ox];
            if (row_inside && ox >= inside[1][0] && ox < inside[1][1]) {
              const T* win = plane + conv::source(w, 0, oy, 0) * sh + conv::source(w, 1, ox, 0) * sw;
              r = max ? win[conv::inner_max_offset(win, sh, sw, w)] : conv::inner_window_sum(win, sh, sw, w) / T(taps);
            } else if (max) {
              const std::int64_t at = conv::max_position(plane, sh, sw, h, wd, w, oy, ox);
              r = plane[at / wd * sh + at % wd * sw];
            } else {
              r = conv::window_sum(plane, sh, sw, h, wd, w, oy, ox) / T(taps);
            }
          }
        }
      }
    });
  });
}

namespace {

// One plane's input and output-gradient geometry for pool2d_backward.
struct PoolPlane {
  std::int64_t h, wd, oh, ow, sh, sw;  // input height and width, output height and width, input strides
};

// 2x2 max windows with stride 2 (tiles_2x2), window by window: 0 + g on the
// winner (as the scatter adds it), 0 elsewhere, and 0 where no window reaches.
template <class T>
void max_2x2_plane_backward(const T* plane, const T* gp, T* dp, const PoolPlane& q, const Window2d& w) {
  const std::int64_t wd = q.wd, offset[4] = {0, 1, wd, wd + 1};  // of the taps in dx
  for (std::int64_t oy = 0; oy < q.oh; ++oy) {
    T* d0 = dp + 2 * oy * wd;
    for (std::int64_t ox = 0; ox < q.ow; ++ox) {
      T best;
      const int tap = max_2x2(plane + 2 * oy * q.sh + 2 * ox, q.sh, w, best);
      T* win = d0 + 2 * ox;
      win[0] = win[1] = win[wd] = win[wd + 1] = T(0);
      win[offset[tap]] = T(0) + gp[oy * q.ow + ox];
    }
    for (std::int64_t ix = 2 * q.ow; ix < wd; ++ix) d0[ix] = d0[wd + ix] = T(0);
  }
  for (std::int64_t i = 2 * q.oh * wd; i < q.h * wd; ++i) dp[i] = T(0);
}

// Any window: dx zeroed, then each output's gradient added to its window's
// maximum (max) or shared among its taps (average). `rows_inner`: no padding
// and contiguous rows, so a window's offsets in x are its offsets in dx.
template <class T>
void scatter_plane_backward(bool max, bool rows_inner, const T* plane, const T* gp, T* dp, const PoolPlane& q,
                            const Window2d& w) {
  const std::int64_t h = q.h, wd = q.wd, taps = w.kernel[0] * w.kernel[1];
  for (std::int64_t i = 0; i < h * wd; ++i) dp[i] = T(0);
  for (std::int64_t oy = 0; oy < q.oh; ++oy)
    for (std::int64_t ox = 0; ox < q.ow; ++ox) {
      const T gv = gp[oy * q.ow + ox];
      if (max && rows_inner) {
        const std::int64_t start = oy * w.stride[0] * wd + ox * w.stride[1];
        dp[start + conv::inner_max_offset(plane + start, wd, 1, w)] += gv;
      } else if (max) {
        dp[conv::max_position(plane, q.sh, q.sw, h, wd, w, oy, ox)] += gv;
      } else {
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
}

}  // namespace

void CpuEngine::pool2d_backward(bool max, const TensorView& x, const TensorView& g, const Window2d& w,
                                const TensorView& dx) {
  const std::int64_t c = x.shape[1], planes = x.shape[0] * c, taps = w.kernel[0] * w.kernel[1];
  const PoolPlane q{x.shape[2], x.shape[3], g.shape[2], g.shape[3], x.strides[2], x.strides[3]};
  std::optional<Scratch> keep;
  const TensorView& gc = contiguous_or_copy(g, keep);
  const bool tiles = tiles_2x2(max, w, x.strides[3]);
  const bool rows_inner = w.padding[0] == 0 && w.padding[1] == 0 && q.sw == 1 && q.sh == q.wd;
  floating(x.dtype, "pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.data);
    const T* gin = static_cast<const T*>(gc.data);
    T* d = static_cast<T*>(dx.data);
    support::parallel_for(planes, grain_for(q.oh * q.ow * taps), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t p = lo; p < hi; ++p) {
        const T* plane = in + p / c * x.strides[0] + p % c * x.strides[1];
        const T* gp = gin + p * q.oh * q.ow;
        T* dp = d + p * q.h * q.wd;
        if (tiles) max_2x2_plane_backward(plane, gp, dp, q, w);
        else scatter_plane_backward(max, rows_inner, plane, gp, dp, q, w);
      }
    });
  });
}

}  // namespace ndgc::ops::cpu
