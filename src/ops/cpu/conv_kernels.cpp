// CPU kernels of conv2d: oneDNN's convolution where it serves one
// (onednn_conv.cpp), im2col and col2im (the pools are in pool_kernels.cpp).
//
// The index maths is ops/conv_math.hpp's (shared with the CUDA engine). The
// work is split over independent rows of the column matrix or over (n, c)
// image planes: each piece writes only its own memory and adds in a fixed
// order, so results are the same bits for any split.
#include <algorithm>
#include <memory>

#include "ops/conv_math.hpp"
#include "ops/cpu/cpu_engine.hpp"
#include "ops/cpu/layer_dispatch.hpp"
#include "ops/cpu/onednn_conv.hpp"

namespace ndgc::ops::cpu {

// Columns for as many images as leave each thread about half of its L2
// (1 MiB a core on the machines perf/RESULTS.md measures): im2col writes
// them and the GEMM reads them back while they are still in the cache,
// instead of a whole batch's columns going out to memory and back (7.2 MB
// for the second convolution of `ndgc-train --model cnn` at batch 32). The
// split never changes a result: every image's columns and product are
// computed alone.
std::int64_t CpuEngine::im2col_images(std::int64_t images, std::int64_t bytes) const noexcept {
  constexpr std::int64_t kColumnBytesPerThread = std::int64_t(512) << 10;
  const std::int64_t fit = support::region_threads() * kColumnBytesPerThread / std::max<std::int64_t>(bytes, 1);
  return std::clamp<std::int64_t>(fit, 1, std::max<std::int64_t>(images, 1));
}

bool CpuEngine::conv2d_direct(const TensorView& x, const TensorView& weight, const TensorView* bias,
                              const Window2d& w, const TensorView& y) {
  return onednn_conv2d(x, weight, bias, w, y);
}

bool CpuEngine::conv2d_16() const noexcept { return onednn_conv_16(); }

void CpuEngine::im2col(const TensorView& x, const Window2d& w, const TensorView& col) {
  const std::int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], wd = x.shape[3];
  const std::int64_t oh = conv::out_size(h, w.kernel[0], w.stride[0], w.padding[0], w.dilation[0]);
  const std::int64_t ow = conv::out_size(wd, w.kernel[1], w.stride[1], w.padding[1], w.dilation[1]);
  const std::int64_t rows = c * w.kernel[0] * w.kernel[1], cols = oh * ow;
  moving(x.dtype, "im2col", [&](auto tag) {
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

}  // namespace ndgc::ops::cpu
