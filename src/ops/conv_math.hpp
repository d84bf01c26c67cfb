// Window arithmetic of conv2d and the 2-D pools, shared by the CPU and CUDA
// engines (NCHW, PyTorch's conventions).
//
// A window slides over the padded input: output (oy, ox) reads input rows
// oy * stride - padding + ky * dilation for ky in [0, kernel), likewise for
// columns. Positions that fall in the padding are outside [0, H) × [0, W).
// im2col lays a [C, H, W] image out as a [C * kH * kW, OH * OW] matrix whose
// row (c, ky, kx) and column (oy, ox) hold the input under that tap (0 in the
// padding), so a convolution is one GEMM per group; col2im is its adjoint
// (adds every column entry back onto the pixel it came from).
// Every function is NDGC_HD, so tests/ops/conv_math_test.cpp runs on the host
// exactly what a GPU kernel would run.
#pragma once

#include <cstdint>

#include "ops/host_device.hpp"

namespace ndgc::ops {

// The parameters of a sliding window over the last two axes of NCHW.
struct Window2d {
  std::int64_t kernel[2] = {1, 1};
  std::int64_t stride[2] = {1, 1};
  std::int64_t padding[2] = {0, 0};
  std::int64_t dilation[2] = {1, 1};
  std::int64_t groups = 1;
};

namespace conv {

// Output length of one axis; <= 0 when the dilated kernel is larger than the padded input.
NDGC_HD inline std::int64_t out_size(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                     std::int64_t padding, std::int64_t dilation) noexcept {
  const std::int64_t span = dilation * (kernel - 1) + 1, room = in + 2 * padding - span;
  return room < 0 ? 0 : room / stride + 1;
}

// The input coordinate under tap k of output position o along axis `a`.
NDGC_HD inline std::int64_t source(const Window2d& w, int a, std::int64_t o, std::int64_t k) noexcept {
  return o * w.stride[a] - w.padding[a] + k * w.dilation[a];
}

// im2col for one image plane set: x [C, H, W] (strides sc, sh, sw in
// elements) into col [C * kH * kW, OH * OW] (contiguous), for the rows
// [row_lo, row_hi) of col. Rows are independent, so any cut of the rows gives
// the same bits.
template <class T>
NDGC_HD inline void im2col_rows(const T* x, std::int64_t sc, std::int64_t sh, std::int64_t sw, std::int64_t h,
                                std::int64_t wd, const Window2d& w, std::int64_t oh, std::int64_t ow, T* col,
                                std::int64_t row_lo, std::int64_t row_hi) noexcept {
  const std::int64_t taps = w.kernel[0] * w.kernel[1];
  for (std::int64_t r = row_lo; r < row_hi; ++r) {
    const std::int64_t c = r / taps, ky = r % taps / w.kernel[1], kx = r % w.kernel[1];
    T* out = col + r * oh * ow;
    for (std::int64_t oy = 0; oy < oh; ++oy) {
      const std::int64_t iy = source(w, 0, oy, ky);
      T* line = out + oy * ow;
      if (iy < 0 || iy >= h) {
        for (std::int64_t ox = 0; ox < ow; ++ox) line[ox] = T(0);
        continue;
      }
      const T* in = x + c * sc + iy * sh;
      for (std::int64_t ox = 0; ox < ow; ++ox) {
        const std::int64_t ix = source(w, 1, ox, kx);
        line[ox] = ix >= 0 && ix < wd ? in[ix * sw] : T(0);
      }
    }
  }
}

// col2im for the channels [c_lo, c_hi): dx [C, H, W] (contiguous) gets, for
// each pixel, the sum of the col entries read from it, added in the fixed
// order (ky, kx, oy, ox), so any cut of the channels gives the same bits.
// dx's channels in the range are overwritten.
template <class T>
NDGC_HD inline void col2im_channels(const T* col, std::int64_t h, std::int64_t wd, const Window2d& w,
                                    std::int64_t oh, std::int64_t ow, T* dx, std::int64_t c_lo,
                                    std::int64_t c_hi) noexcept {
  const std::int64_t taps = w.kernel[0] * w.kernel[1];
  for (std::int64_t c = c_lo; c < c_hi; ++c) {
    T* plane = dx + c * h * wd;
    for (std::int64_t i = 0; i < h * wd; ++i) plane[i] = T(0);
    for (std::int64_t t = 0; t < taps; ++t) {
      const std::int64_t ky = t / w.kernel[1], kx = t % w.kernel[1];
      const T* in = col + (c * taps + t) * oh * ow;
      for (std::int64_t oy = 0; oy < oh; ++oy) {
        const std::int64_t iy = source(w, 0, oy, ky);
        if (iy < 0 || iy >= h) continue;
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          const std::int64_t ix = source(w, 1, ox, kx);
          if (ix >= 0 && ix < wd) plane[iy * wd + ix] += in[oy * ow + ox];
        }
      }
    }
  }
}

// The first input position (flat iy * W + ix) holding a window's maximum,
// padding excluded (it never wins); -1 when the window holds no input.
template <class T>
NDGC_HD inline std::int64_t max_position(const T* x, std::int64_t sh, std::int64_t sw, std::int64_t h,
                                         std::int64_t wd, const Window2d& w, std::int64_t oy,
                                         std::int64_t ox) noexcept {
  std::int64_t best = -1;
  T value = T(0);
  for (std::int64_t ky = 0; ky < w.kernel[0]; ++ky) {
    const std::int64_t iy = source(w, 0, oy, ky);
    if (iy < 0 || iy >= h) continue;
    for (std::int64_t kx = 0; kx < w.kernel[1]; ++kx) {
      const std::int64_t ix = source(w, 1, ox, kx);
      if (ix < 0 || ix >= wd) continue;
      const T v = x[iy * sh + ix * sw];
      if (best < 0 || v > value || v != v) {  // NaN wins, as in PyTorch
        if (best >= 0 && value != value) continue;
        best = iy * wd + ix, value = v;
      }
    }
  }
  return best;
}

// The sum of a window's input elements (padding adds zeros).
template <class T>
NDGC_HD inline T window_sum(const T* x, std::int64_t sh, std::int64_t sw, std::int64_t h, std::int64_t wd,
                            const Window2d& w, std::int64_t oy, std::int64_t ox) noexcept {
  T s = T(0);
  for (std::int64_t ky = 0; ky < w.kernel[0]; ++ky) {
    const std::int64_t iy = source(w, 0, oy, ky);
    if (iy < 0 || iy >= h) continue;
    for (std::int64_t kx = 0; kx < w.kernel[1]; ++kx) {
      const std::int64_t ix = source(w, 1, ox, kx);
      if (ix >= 0 && ix < wd) s += x[iy * sh + ix * sw];
    }
  }
  return s;
}

}  // namespace conv
}  // namespace ndgc::ops
