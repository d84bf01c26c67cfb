// float32 and bfloat16 convolutions through oneDNN's convolution primitive (Note
// [Convolutions through oneDNN] in onednn_conv.cpp), for builds that found
// libdnnl (NDGC_HAVE_ONEDNN). Elsewhere conv2d goes through im2col and a
// product (Note [Convolution as GEMM] in ops/conv.cpp).
#pragma once

#include <cstdint>

#include "ops/conv_math.hpp"
#include "ops/cpu/onednn.hpp"
#include "ops/engine.hpp"

namespace ndgc::ops::cpu {

// y [N, O, OH, OW] = the convolution of x [N, C, H, W] (any positive
// strides) by weight [O, C / groups, kH, kW] under `w`, plus bias [O] where
// given (contiguous), in fixed
// tasks over the pool: one image, or one block of an image's output
// channels, per task, each on one thread. The tasks depend on the image's
// shape alone, so the bits depend neither on the thread count nor on the
// batch an image comes in. False, with y untouched, where oneDNN does not
// serve the convolution: a build or a CPU without it, NDGC_CPU_GEMM=eigen, a
// dtype other than float32 and bfloat16 (bfloat16 only where the CPU has
// AVX512-BF16), views of mixed dtypes, a weight, bias or y that is not contiguous, an empty
// axis, fewer than 65,536 multiply-adds per task, or a geometry its fast
// kernels do not take.
bool onednn_conv2d(const TensorView& x, const TensorView& weight, const TensorView* bias, const Window2d& w,
                   const TensorView& y);

// Whether onednn_conv2d takes bfloat16 views here (Engine::conv2d_16).
bool onednn_conv_16() noexcept;

// Tasks onednn_conv2d has run in this process (one oneDNN convolution each).
std::uint64_t onednn_convolutions() noexcept;

// How many blocks onednn_conv2d cuts an image's `out_channels` output
// channels into, for `work` multiply-adds per image and `groups` groups: 2
// for an ungrouped convolution whose halves are whole 16-channel groups of
// 2^22 multiply-adds or more, so that a batch of one image still feeds two
// threads; 1 otherwise.
std::int64_t onednn_conv_blocks(std::int64_t out_channels, std::int64_t groups, std::int64_t work) noexcept;

}  // namespace ndgc::ops::cpu
