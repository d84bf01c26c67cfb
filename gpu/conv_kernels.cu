// CUDA kernels of conv2d and the 2-D pools: im2col, col2im, pool2d and its
// backward. Twins of src/ops/cpu/conv_kernels.cpp (im2col, col2im) and
// src/ops/cpu/pool_kernels.cpp (the pools); the GEMM between im2col
// and col2im is the ops layer's, through the engine's matmul (cuBLAS).
//
// One thread per entry of what is written (grid-stride, 64-bit indices), and
// each thread computes its entry with ops/conv_math.hpp's NDGC_HD functions,
// which the host tests check against the CPU's loops. The two adjoints are
// gathers, never scatters: col2im and pool2d_backward run one thread per
// input pixel that sums, in the CPU's order, what reaches that pixel
// (col2im_pixel, pool_gradient_pixel), so there are no atomics and the
// results are the CPU's bits. The max pool's backward recomputes each
// window's max_position instead of keeping an argmax buffer between passes.
#include "kernels.hpp"
#include "launch.cuh"
#include "ops/conv_math.hpp"

namespace ndgc::cuda::kernels {
namespace {

using ops::Window2d;

// The axis lengths and strides of an NCHW view, by value for a launch.
struct Nchw {
  std::int64_t n, c, h, w;
  std::int64_t sn, sc, sh, sw;
  explicit Nchw(const TensorView& v)
      : n(v.shape[0]), c(v.shape[1]), h(v.shape[2]), w(v.shape[3]), sn(v.strides[0]), sc(v.strides[1]),
        sh(v.strides[2]), sw(v.strides[3]) {}
};

std::int64_t out_size(const Window2d& w, int a, std::int64_t in) {
  return ops::conv::out_size(in, w.kernel[a], w.stride[a], w.padding[a], w.dilation[a]);
}

// col [N, C·kH·kW, OH·OW], contiguous: entry e = ((img · rows + r) · OH + oy) · OW + ox.
template <class T>
__global__ void im2col_kernel(const T* x, Nchw s, Window2d w, std::int64_t oh, std::int64_t ow, T* col,
                              std::int64_t total) {
  const std::int64_t rows = s.c * w.kernel[0] * w.kernel[1];
  for (std::int64_t e = global_index(); e < total; e += grid_stride()) {
    const std::int64_t ox = e % ow, oy = e / ow % oh, r = e / (ow * oh) % rows, img = e / (ow * oh * rows);
    col[e] = ops::conv::im2col_entry(x + img * s.sn, s.sc, s.sh, s.sw, s.h, s.w, w, r, oy, ox);
  }
}

// dx [N, C, H, W], contiguous: one thread per pixel, gathering its column entries.
template <class T>
__global__ void col2im_kernel(const T* col, Window2d w, std::int64_t c, std::int64_t h, std::int64_t wd,
                              std::int64_t oh, std::int64_t ow, T* dx, std::int64_t total) {
  const std::int64_t image = c * w.kernel[0] * w.kernel[1] * oh * ow;
  for (std::int64_t e = global_index(); e < total; e += grid_stride()) {
    const std::int64_t ix = e % wd, iy = e / wd % h, ch = e / (wd * h) % c, img = e / (wd * h * c);
    dx[e] = T(ops::conv::col2im_pixel(col + img * image, w, oh, ow, ch, iy, ix));
  }
}

// out [N, C, OH, OW], contiguous: one thread per window.
template <class T>
__global__ void pool_kernel(bool max, const T* x, Nchw s, Window2d w, std::int64_t oh, std::int64_t ow, T* out,
                            std::int64_t total) {
  using A = ops::conv::Acc<T>;
  const A taps = A(w.kernel[0] * w.kernel[1]);
  for (std::int64_t e = global_index(); e < total; e += grid_stride()) {
    const std::int64_t ox = e % ow, oy = e / ow % oh, ch = e / (ow * oh) % s.c, img = e / (ow * oh * s.c);
    const T* plane = x + img * s.sn + ch * s.sc;
    if (max) {
      const std::int64_t at = ops::conv::max_position(plane, s.sh, s.sw, s.h, s.w, w, oy, ox);
      // A window always holds an input element (the ops layer limits the padding); guard anyway.
      out[e] = at < 0 ? T(A(0)) : plane[at / s.w * s.sh + at % s.w * s.sw];
    } else {
      out[e] = T(ops::conv::window_sum(plane, s.sh, s.sw, s.h, s.w, w, oy, ox) / taps);
    }
  }
}

// dx [N, C, H, W], contiguous: one thread per input pixel, gathering the windows that hold it.
template <class T>
__global__ void pool_backward_kernel(bool max, const T* x, Nchw s, const T* g, Nchw gs, Window2d w, T* dx,
                                     std::int64_t total) {
  for (std::int64_t e = global_index(); e < total; e += grid_stride()) {
    const std::int64_t ix = e % s.w, iy = e / s.w % s.h, ch = e / (s.w * s.h) % s.c, img = e / (s.w * s.h * s.c);
    dx[e] = T(ops::conv::pool_gradient_pixel(max, x + img * s.sn + ch * s.sc, s.sh, s.sw, s.h, s.w,
                                             g + img * gs.sn + ch * gs.sc, gs.sh, gs.sw, gs.h, gs.w, w, iy, ix));
  }
}

// Note [Pools without overlap]
// pool_backward_kernel gathers: one thread per input pixel visits every
// window that may hold it, with 64-bit divisions for each (output_of) and a
// scan of each window for the max pool: 0.86 ms for the first pool of
// `ndgc-train --model cnn` at batch 256 on an H100 (ncu), more than all its
// products. When the windows tile the input (stride = kernel, no padding, no
// dilation: the 2x2 pools of most CNNs), a pixel lies in at most one window,
// so one thread per window writes all its pixels instead: the gradient at
// the window's max position (every pixel, divided by the taps, for the
// average), 0 elsewhere. Each is added to 0, as the gather adds it, so a -0
// gradient lands as +0 on both: the CPU's bits. Pixels that no window covers
// (H or W not a multiple of the kernel) are zeroed first.
bool tiles(const Window2d& w) {
  return w.stride[0] == w.kernel[0] && w.stride[1] == w.kernel[1] && w.padding[0] == 0 && w.padding[1] == 0 &&
         w.dilation[0] == 1 && w.dilation[1] == 1;
}

// dx [N, C, H, W], contiguous: one thread per window of a tiling pool.
template <class T>
__global__ void pool_backward_tiled_kernel(bool max, const T* x, Nchw s, const T* g, Nchw gs, Window2d w, T* dx,
                                           std::int64_t total) {
  using A = ops::conv::Acc<T>;
  const A taps = A(w.kernel[0] * w.kernel[1]);
  for (std::int64_t e = global_index(); e < total; e += grid_stride()) {
    const std::int64_t ox = e % gs.w, oy = e / gs.w % gs.h, ch = e / (gs.w * gs.h) % s.c,
                       img = e / (gs.w * gs.h * s.c);
    const T* plane = x + img * s.sn + ch * s.sc;
    const A gv = A(g[img * gs.sn + ch * gs.sc + oy * gs.sh + ox * gs.sw]);
    const std::int64_t at = max ? ops::conv::max_position(plane, s.sh, s.sw, s.h, s.w, w, oy, ox) : -1;
    T* d = dx + (img * s.c + ch) * s.h * s.w;
    for (std::int64_t ky = 0; ky < w.kernel[0]; ++ky)
      for (std::int64_t kx = 0; kx < w.kernel[1]; ++kx) {
        const std::int64_t pixel = (oy * w.kernel[0] + ky) * s.w + ox * w.kernel[1] + kx;
        const A v = max ? (pixel == at ? gv : A(0)) : gv / taps;
        d[pixel] = T(A(0) + v);
      }
  }
}


}  // namespace

void im2col(const TensorView& x, const Window2d& w, const TensorView& col, cudaStream_t stream) {
  const Nchw s(x);
  const std::int64_t oh = out_size(w, 0, s.h), ow = out_size(w, 1, s.w);
  const std::int64_t total = s.n * s.c * w.kernel[0] * w.kernel[1] * oh * ow;
  if (total == 0) return;
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    im2col_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const T*>(x.data), s, w, oh, ow,
                                                                  static_cast<T*>(col.data), total);
  };
  if (is_half(x.dtype)) launch(std::uint16_t{});  // values only move: 16-bit ones as their bits
  else if (x.dtype == DataType::float64) launch(double{});
  else launch(float{});
  CUDA_CHECK_LAUNCH();
}

void col2im(const TensorView& col, const Window2d& w, const TensorView& dx, cudaStream_t stream) {
  const Nchw s(dx);
  const std::int64_t oh = out_size(w, 0, s.h), ow = out_size(w, 1, s.w), total = dx.size();
  if (total == 0) return;
  dispatch_floating(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    col2im_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const T*>(col.data), w, s.c, s.h,
                                                                  s.w, oh, ow, static_cast<T*>(dx.data), total);
  });
  CUDA_CHECK_LAUNCH();
}

void pool2d(bool max, const TensorView& x, const Window2d& w, const TensorView& out, cudaStream_t stream) {
  const std::int64_t total = out.size();
  if (total == 0) return;
  dispatch_floating(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    pool_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(max, static_cast<const T*>(x.data), Nchw(x), w,
                                                                out.shape[2], out.shape[3],
                                                                static_cast<T*>(out.data), total);
  });
  CUDA_CHECK_LAUNCH();
}

void pool2d_backward(bool max, const TensorView& x, const TensorView& g, const Window2d& w, const TensorView& dx,
                     cudaStream_t stream) {
  const std::int64_t total = dx.size();
  if (total == 0) return;
  if (tiles(w)) {  // Note [Pools without overlap]
    const Nchw s(x), gs(g);
    if (s.h % w.kernel[0] != 0 || s.w % w.kernel[1] != 0) fill(dx, 0.0, stream);
    const std::int64_t windows = g.size();
    if (windows == 0) return;
    dispatch_floating(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      pool_backward_tiled_kernel<T><<<blocks_for(windows), kThreads, 0, stream>>>(
          max, static_cast<const T*>(x.data), s, static_cast<const T*>(g.data), gs, w, static_cast<T*>(dx.data),
          windows);
    });
    CUDA_CHECK_LAUNCH();
    return;
  }
  dispatch_floating(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    pool_backward_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
        max, static_cast<const T*>(x.data), Nchw(x), static_cast<const T*>(g.data), Nchw(g), w,
        static_cast<T*>(dx.data), total);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace ndgc::cuda::kernels
