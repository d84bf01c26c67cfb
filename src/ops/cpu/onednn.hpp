// What oneDNN's products (onednn_gemm.hpp) and convolutions (onednn_conv.hpp)
// share, for builds that found libdnnl (NDGC_HAVE_ONEDNN). A build without it
// computes every product with Eigen and every convolution through im2col.
#pragma once

namespace ndgc::ops::cpu {

// Whether float32 products and convolutions go to oneDNN: a build and a CPU
// with it (AVX-512), and NDGC_CPU_GEMM not set to eigen.
bool onednn_enabled();

// Whether the calling thread is inside a oneDNN execute now. oneDNN
// allocates a few small blocks on every execute (its argument map), freed
// before it returns; the steady-step allocation tests ask this from their
// malloc hook to tell those apart from ndgc's own.
bool inside_onednn() noexcept;

}  // namespace ndgc::ops::cpu
