// The ops of neural-network layers: convolution, pooling, normalisation,
// dropout and embedding (issue 27). NCHW and PyTorch's arithmetic.
//
//   NDArray y = conv2d(x, w, b, {1, 1}, {1, 1});          // x [N, C, H, W], w [O, C, 3, 3]
//   y = max_pool2d(y.relu(), {2, 2}, {2, 2});
//   y = batch_norm(y, gamma, beta, running_mean, running_var, /*training=*/true);
//   NDArray e = embedding(tokens, table);                 // tokens int64 [B, T], table [V, D]
//
// Each op records on the tape and has a gradient for every floating input;
// inputs are float32 or float64 (embedding's indices any integer dtype) and
// may be views. An op's output joins its first input's manager; a failed call
// leaves no array behind. The backward passes recompute what they need (im2col
// columns, normalisation statistics, dropout masks from their seed) instead of
// keeping per-step arrays alive.
#pragma once

#include <array>
#include <cstdint>

#include "ndgc/ndarray.hpp"

namespace ndgc {

// {height, width}
using Pair = std::array<std::int64_t, 2>;

// x [N, C, H, W], weight [O, C / groups, kH, kW], bias [O] or NDArray{} for
// none → [N, O, H', W'], H' = (H + 2 pH - dH (kH - 1) - 1) / sH + 1.
// On the CPU a float32 forward pass runs oneDNN's direct convolution
// kernels where the build has oneDNN (bfloat16 too, where the CPU has
// AVX512-BF16); on a GPU the pass and both gradients run cuDNN's; otherwise,
// and for the gradients on the CPU, it is computed as im2col into a scratch
// buffer and one GEMM per group.
NDArray conv2d(const NDArray& x, const NDArray& weight, const NDArray& bias, Pair stride = {1, 1},
               Pair padding = {0, 0}, Pair dilation = {1, 1}, std::int64_t groups = 1,
               Site site = Site::current());
// The padding never wins (it is -∞); the first maximum of a window gets the gradient.
// Padding may be at most half the kernel.
NDArray max_pool2d(const NDArray& x, Pair kernel, Pair stride, Pair padding = {0, 0},
                   Site site = Site::current());
// Dilated: the window's taps `dilation` apart (PyTorch's dilation), so it
// spans dilation · (kernel - 1) + 1 elements; the padding rule is the same.
NDArray max_pool2d(const NDArray& x, Pair kernel, Pair stride, Pair padding, Pair dilation,
                   Site site = Site::current());
// The mean over kH·kW elements, padding counting as zeros.
NDArray avg_pool2d(const NDArray& x, Pair kernel, Pair stride, Pair padding = {0, 0},
                   Site site = Site::current());
// Channel axis 1 of x [N, C, ...]; gamma, beta, running_mean, running_var [C].
// training: normalise by the batch mean and biased variance and update the
// running statistics in place, unrecorded: running = (1 - momentum) running +
// momentum statistic (the unbiased variance). Not training: normalise by the
// running statistics. The four parameters share one dtype: x's, or float32
// for a float16 or bfloat16 x (mixed precision: the statistics run in
// float32, the output is x's dtype).
NDArray batch_norm(const NDArray& x, const NDArray& gamma, const NDArray& beta, const NDArray& running_mean,
                   const NDArray& running_var, bool training, double momentum = 0.1, double eps = 1e-5,
                   Site site = Site::current());
// Over the last gamma.shape().rank() axes of x, whose shape they must end with.
NDArray layer_norm(const NDArray& x, const NDArray& gamma, const NDArray& beta, double eps = 1e-5,
                   Site site = Site::current());
// training: each element zeroed with probability p in [0, 1), the others
// scaled by 1 / (1 - p), from set_random_seed's stream; the backward pass
// redraws the same mask from the same positions of the stream. Not training,
// or p = 0: x itself.
NDArray dropout(const NDArray& x, double p, bool training, Site site = Site::current());
// indices: integer [...], weight [V, D] → [..., D]. An index outside [0, V) is
// InvalidArgument naming its value and position. The gradient of a repeated
// index is the sum of its rows, added in index order (deterministic).
NDArray embedding(const NDArray& indices, const NDArray& weight, Site site = Site::current());

}  // namespace ndgc
