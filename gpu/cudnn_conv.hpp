// conv2d and its two gradients through cuDNN's convolutions (the CUDA
// engine's conv2d_direct and conv2d_backward_*_direct). See Note
// [Convolutions through cuDNN] in cudnn_conv.cpp.
//
// Each returns false, with its output untouched, where cuDNN offers no
// deterministic algorithm for the views (or cannot describe them, or its
// library could not load): the caller then goes through im2col and cuBLAS.
// Thread-safe: per-thread handles and algorithm choices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ops/engine.hpp"

namespace ndgc::cuda {

// y [N, O, OH, OW] = x [N, C, H, W] (any positive strides) convolved by
// weight [O, C / groups, kH, kW] (contiguous); no bias.
bool cudnn_conv2d(const ops::TensorView& x, const ops::TensorView& weight, const ops::Window2d& w,
                  const ops::TensorView& y);
// dx [N, C, H, W] from g [N, O, OH, OW] and weight (all contiguous).
bool cudnn_conv2d_backward_data(const ops::TensorView& g, const ops::TensorView& weight, const ops::Window2d& w,
                                const ops::TensorView& dx);
// dweight [O, C / groups, kH, kW] from x (any positive strides) and g (contiguous).
bool cudnn_conv2d_backward_weight(const ops::TensorView& x, const ops::TensorView& g, const ops::Window2d& w,
                                  const ops::TensorView& dweight);

// Whether cuDNN's descriptors take a forward call's views, and cuDNN's
// output shape is y's: the host-side half of cudnn_conv2d, which needs
// neither a GPU nor a handle (tests/gpu/cudnn_describe_test.cpp).
bool cudnn_describes(const ops::TensorView& x, const ops::TensorView& weight, const ops::Window2d& w,
                     const ops::TensorView& y);

// Convolutions (forward or gradient) run through cuDNN since the process
// started, and why cuDNN cannot run here (empty when it can).
std::uint64_t cudnn_convolutions() noexcept;
// The version of the cuDNN library loaded (cudnnGetVersion: 91900 for 9.19.0).
std::size_t cudnn_version() noexcept;
std::string cudnn_unavailable() noexcept;

}  // namespace ndgc::cuda
