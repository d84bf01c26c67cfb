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
// exactly what a GPU kernel would run. The CPU engine cuts work by rows and
// channels (im2col_rows, col2im_channels); the CUDA engine runs one thread per
// entry or pixel (im2col_entry, col2im_pixel, pool_gradient_pixel), which
// the tests check against the CPU's loops bit for bit.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ndgc/half.hpp"
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

// What the gathering functions below add and compare in: float for float16
// and bfloat16 (the CUDA kernels take 16-bit views and round once on store,
// Engine::kernels_16), T itself otherwise.
template <class T>
using Acc = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;

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

// The output positions [lo, hi) along axis `a` whose tap k reads inside
// [0, size): source() is increasing in o, so they are one run.
NDGC_HD inline void inside_run(const Window2d& w, int a, std::int64_t k, std::int64_t size, std::int64_t o_size,
                               std::int64_t& lo, std::int64_t& hi) noexcept {
  const std::int64_t shift = w.padding[a] - k * w.dilation[a], s = w.stride[a];  // source = o s - shift
  lo = shift <= 0 ? 0 : (shift + s - 1) / s;
  const std::int64_t last = size - 1 + shift;  // the largest o s allowed
  hi = last < 0 ? 0 : last / s + 1;
  if (hi > o_size) hi = o_size;
  if (lo > hi) lo = hi;
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
    // Each line: zeros, the run of outputs whose tap reads inside the row, zeros.
    std::int64_t lo, hi;
    inside_run(w, 1, kx, wd, ow, lo, hi);
    const std::int64_t step = w.stride[1] * sw;
    for (std::int64_t oy = 0; oy < oh; ++oy) {
      const std::int64_t iy = source(w, 0, oy, ky);
      T* line = out + oy * ow;
      if (iy < 0 || iy >= h) {
        for (std::int64_t ox = 0; ox < ow; ++ox) line[ox] = T(0);
        continue;
      }
      const T* in = x + c * sc + iy * sh;
      const std::int64_t first = source(w, 1, 0, kx) * sw;  // in[first + ox * step]: tap kx of output ox
      for (std::int64_t ox = 0; ox < lo; ++ox) line[ox] = T(0);
      if (step != 1)
        for (std::int64_t ox = lo; ox < hi; ++ox) line[ox] = in[first + ox * step];
      else if (hi > lo)  // a few dozen elements: memcpy's few wide moves beat a loop's remainder
        memcpy(line + lo, in + first + lo, std::size_t(hi - lo) * sizeof(T));
      for (std::int64_t ox = hi; ox < ow; ++ox) line[ox] = T(0);
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
      std::int64_t lo, hi;
      inside_run(w, 1, kx, wd, ow, lo, hi);
      const std::int64_t step = w.stride[1];
      for (std::int64_t oy = 0; oy < oh; ++oy) {
        const std::int64_t iy = source(w, 0, oy, ky);
        if (iy < 0 || iy >= h) continue;
        T* row = plane + iy * wd;
        const std::int64_t first = source(w, 1, 0, kx);  // row[first + ox * step]: what tap kx of output ox reads
        const T* from = in + oy * ow;
        if (step == 1)
          for (std::int64_t ox = lo; ox < hi; ++ox) row[first + ox] += from[ox];
        else
          for (std::int64_t ox = lo; ox < hi; ++ox) row[first + ox * step] += from[ox];
      }
    }
  }
}

// The output position o along axis `a` whose tap k reads input coordinate i;
// false when none does (i is not on that tap's grid, or o falls outside
// [0, o_size)). A tap reads a coordinate from at most one output position.
NDGC_HD inline bool output_of(const Window2d& w, int a, std::int64_t i, std::int64_t k, std::int64_t o_size,
                              std::int64_t& o) noexcept {
  const std::int64_t at = i + w.padding[a] - k * w.dilation[a];
  if (at < 0 || at % w.stride[a] != 0) return false;
  o = at / w.stride[a];
  return o < o_size;
}

// One entry of im2col's matrix: row r = (c, ky, kx), column (oy, ox), read
// from x [C, H, W] (strides sc, sh, sw); 0 in the padding. The value
// im2col_rows writes there (one GPU thread per entry).
template <class T>
NDGC_HD inline T im2col_entry(const T* x, std::int64_t sc, std::int64_t sh, std::int64_t sw, std::int64_t h,
                              std::int64_t wd, const Window2d& w, std::int64_t r, std::int64_t oy,
                              std::int64_t ox) noexcept {
  const std::int64_t taps = w.kernel[0] * w.kernel[1];
  const std::int64_t c = r / taps, ky = r % taps / w.kernel[1], kx = r % w.kernel[1];
  const std::int64_t iy = source(w, 0, oy, ky), ix = source(w, 1, ox, kx);
  return iy >= 0 && iy < h && ix >= 0 && ix < wd ? x[c * sc + iy * sh + ix * sw] : T(0);
}

// col2im gathered: pixel (c, iy, ix) of dx, the sum of the col entries read
// from it. col2im_channels adds them tap by tap, and a tap reads the pixel
// from at most one output position, so summing here in tap order (from 0)
// gives the same bits with one GPU thread per pixel and no atomics.
template <class T>
NDGC_HD inline Acc<T> col2im_pixel(const T* col, const Window2d& w, std::int64_t oh, std::int64_t ow,
                                   std::int64_t c, std::int64_t iy, std::int64_t ix) noexcept {
  const std::int64_t taps = w.kernel[0] * w.kernel[1];
  Acc<T> s = Acc<T>(0);
  for (std::int64_t t = 0; t < taps; ++t) {
    std::int64_t oy, ox;
    if (!output_of(w, 0, iy, t / w.kernel[1], oh, oy) || !output_of(w, 1, ix, t % w.kernel[1], ow, ox)) continue;
    s += Acc<T>(col[(c * taps + t) * oh * ow + oy * ow + ox]);
  }
  return s;
}

// The first input position (flat iy * W + ix) holding a window's maximum,
// padding excluded (it never wins); -1 when the window holds no input.
template <class T>
NDGC_HD inline std::int64_t max_position(const T* x, std::int64_t sh, std::int64_t sw, std::int64_t h,
                                         std::int64_t wd, const Window2d& w, std::int64_t oy,
                                         std::int64_t ox) noexcept {
  std::int64_t best = -1;
  Acc<T> value = Acc<T>(0);
  for (std::int64_t ky = 0; ky < w.kernel[0]; ++ky) {
    const std::int64_t iy = source(w, 0, oy, ky);
    if (iy < 0 || iy >= h) continue;
    for (std::int64_t kx = 0; kx < w.kernel[1]; ++kx) {
      const std::int64_t ix = source(w, 1, ox, kx);
      if (ix < 0 || ix >= wd) continue;
      const Acc<T> v = Acc<T>(x[iy * sh + ix * sw]);
      if (best < 0 || v > value || v != v) {  // NaN wins, as in PyTorch
        if (best >= 0 && value != value) continue;
        best = iy * wd + ix, value = v;
      }
    }
  }
  return best;
}

// max_position for a window that holds no padding, as an element offset from
// its top-left input (x points there; strides sh, sw): the same tap, first
// NaN else first maximum, with no bounds checks. When the plane's rows are
// contiguous (sw = 1, sh = W) the offset is also the flat position's offset.
template <class T>
NDGC_HD inline std::int64_t inner_max_offset(const T* x, std::int64_t sh, std::int64_t sw,
                                             const Window2d& w) noexcept {
  std::int64_t best = 0;
  T value = x[0];
  if (value != value) return 0;
  const std::int64_t step_y = w.dilation[0] * sh, step_x = w.dilation[1] * sw;
  for (std::int64_t ky = 0; ky < w.kernel[0]; ++ky)
    for (std::int64_t kx = 0; kx < w.kernel[1]; ++kx) {
      const std::int64_t at = ky * step_y + kx * step_x;
      const T v = x[at];
      if (v != v) return at;
      if (v > value) best = at, value = v;
    }
  return best;
}

// window_sum for a window that holds no padding (x at its top-left input):
// the same additions in the same order.
template <class T>
NDGC_HD inline T inner_window_sum(const T* x, std::int64_t sh, std::int64_t sw, const Window2d& w) noexcept {
  T s = T(0);
  const std::int64_t step_y = w.dilation[0] * sh, step_x = w.dilation[1] * sw;
  for (std::int64_t ky = 0; ky < w.kernel[0]; ++ky)
    for (std::int64_t kx = 0; kx < w.kernel[1]; ++kx) s += x[ky * step_y + kx * step_x];
  return s;
}

// The sum of a window's input elements (padding adds zeros).
template <class T>
NDGC_HD inline Acc<T> window_sum(const T* x, std::int64_t sh, std::int64_t sw, std::int64_t h, std::int64_t wd,
                                 const Window2d& w, std::int64_t oy, std::int64_t ox) noexcept {
  Acc<T> s = Acc<T>(0);
  for (std::int64_t ky = 0; ky < w.kernel[0]; ++ky) {
    const std::int64_t iy = source(w, 0, oy, ky);
    if (iy < 0 || iy >= h) continue;
    for (std::int64_t kx = 0; kx < w.kernel[1]; ++kx) {
      const std::int64_t ix = source(w, 1, ox, kx);
      if (ix >= 0 && ix < wd) s += Acc<T>(x[iy * sh + ix * sw]);
    }
  }
  return s;
}

// pool2d's backward gathered: the gradient of input pixel (iy, ix) of one
// plane (x with strides sh, sw; g [OH, OW] with strides gsh, gsw), the sum
// over the windows holding it of max: g where the window's max_position is
// this pixel; avg: g / (kH kW). The windows are visited in the order (oy, ox)
// in which the CPU's scatter loop adds them (ky, kx descending give oy, ox
// ascending), from 0, so the same bits with one GPU thread per pixel.
template <class T>
NDGC_HD inline Acc<T> pool_gradient_pixel(bool max, const T* x, std::int64_t sh, std::int64_t sw, std::int64_t h,
                                          std::int64_t wd, const T* g, std::int64_t gsh, std::int64_t gsw,
                                          std::int64_t oh, std::int64_t ow, const Window2d& w, std::int64_t iy,
                                          std::int64_t ix) noexcept {
  const std::int64_t taps = w.kernel[0] * w.kernel[1], self = iy * wd + ix;
  Acc<T> s = Acc<T>(0);
  for (std::int64_t ky = w.kernel[0] - 1; ky >= 0; --ky) {
    std::int64_t oy;
    if (!output_of(w, 0, iy, ky, oh, oy)) continue;
    for (std::int64_t kx = w.kernel[1] - 1; kx >= 0; --kx) {
      std::int64_t ox;
      if (!output_of(w, 1, ix, kx, ow, ox)) continue;
      const Acc<T> gv = Acc<T>(g[oy * gsh + ox * gsw]);
      if (!max) s += gv / Acc<T>(taps);
      else if (max_position(x, sh, sw, h, wd, w, oy, ox) == self) s += gv;
    }
  }
  return s;
}

}  // namespace conv
}  // namespace ndgc::ops
