// CPU kernels of conv2d and the 2-D pools: im2col, col2im, pool2d and its backward.
//
// The index maths is ops/conv_math.hpp's (shared with the CUDA engine). The
// work is split over independent rows of the column matrix or over (n, c)
// image planes: each piece writes only its own memory and adds in a fixed
// order, so results are the same bits for any split.
#include <memory>

#include "ops/conv_math.hpp"
#include "ops/cpu/cpu_engine.hpp"
#include "ops/cpu/layer_dispatch.hpp"

namespace ndgc::ops::cpu {

void CpuEngine::im2col(const TensorView& x, const Window2d& w, const TensorView& col) {
  const std::int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], wd = x.shape[3];
  const std::int64_t oh = conv::out_size(h, w.kernel[0], w.stride[0], w.padding[0], w.dilation[0]);
  const std::int64_t ow = conv::out_size(wd, w.kernel[1], w.stride[1], w.padding[1], w.dilation[1]);
  const std::int64_t rows = c * w.kernel[0] * w.kernel[1], cols = oh * ow;
  floating(x.dtype, "im2col", [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.data);
    T* out = static_cast<T*>(col.data);
    support::parallel_for(n * rows, grain_for(cols), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi;) {
        const std::int64_t img = i / rows, r = i % rows, end = std::min(hi - img * rows, rows);
        conv::im2col_rows(in + img * x.strides[0], x.strides[1], x.strides[2], x.strides[3], h, wd, w, oh, ow,
                          out + img * rows * cols, r, end);
        i = img * rows + end;
      }
    });
  });
}

void CpuEngine::col2im(const TensorView& col, const Window2d& w, const TensorView& dx) {
  const std::int64_t n = dx.shape[0], c = dx.shape[1], h = dx.shape[2], wd = dx.shape[3];
  const std::int64_t oh = conv::out_size(h, w.kernel[0], w.stride[0], w.padding[0], w.dilation[0]);
  const std::int64_t ow = conv::out_size(wd, w.kernel[1], w.stride[1], w.padding[1], w.dilation[1]);
  const std::int64_t taps = w.kernel[0] * w.kernel[1];
  floating(dx.dtype, "col2im", [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(col.data);
    T* out = static_cast<T*>(dx.data);
    support::parallel_for(n * c, grain_for(taps * oh * ow), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t p = lo; p < hi; ++p) {
        const std::int64_t img = p / c, ch = p % c;
        conv::col2im_channels(in + img * c * taps * oh * ow, h, wd, w, oh, ow, out + img * c * h * wd, ch, ch + 1);
      }
    });
  });
}

void CpuEngine::pool2d(bool max, const TensorView& x, const Window2d& w, const TensorView& out) {
  const std::int64_t c = x.shape[1], h = x.shape[2], wd = x.shape[3], oh = out.shape[2], ow = out.shape[3];
  const std::int64_t planes = x.shape[0] * c, taps = w.kernel[0] * w.kernel[1];
  const std::int64_t sh = x.strides[2], sw = x.strides[3];
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
