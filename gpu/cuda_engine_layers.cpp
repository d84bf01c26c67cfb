// The CUDA engine's layer entry points (issue 27): conv through cuDNN (cudnn_conv.cpp) or im2col and col2im,
// the pools, GELU, dropout, embedding, the normalisations and the LSTM cell,
// forward and backward. The kernels are in conv_kernels.cu, layer_kernels.cu,
// norm_kernels.cu and lstm_kernels.cu; this file does what the CPU engine's
// twins do around their loops (src/ops/cpu/*_kernels.cpp): checks the dtype,
// makes contiguous what a kernel wants contiguous, and turns a value a kernel
// flagged (an embedding index out of range) into InvalidArgument with the
// CPU's message. The embedding's *_in_range entries skip that check, a wait,
// for indices their caller checked.
//
// Every copy and scratch buffer is a DeviceScratch from the device's
// allocator (accounted, under its limits and workspaces; freed
// stream-ordered), never a raw cudaMalloc.
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cuda_check.hpp"
#include "cuda_context.hpp"
#include "cuda_engine.hpp"
#include "cudnn_conv.hpp"
#include "engine_support.hpp"
#include "kernels.hpp"
#include "ndgc/error.hpp"

namespace ndgc::cuda {

using ops::TensorView;
using ops::Window2d;

namespace {

// The layer kernels serve float32 and float64 only (the CPU's message).
void check_floating(DataType t, const char* kernel) {
  if (t != DataType::float32 && t != DataType::float64)
    throw InvalidArgument(fmt::format("{}: float32 or float64 only, not {}", kernel, to_string(t)));
}

// The kernels that also take float16 and bfloat16 (Engine::kernels_16; the
// batch norms with float32 parameters, Engine::batch_norm_16).
void check_floating_16(DataType t, const char* kernel) {
  if (!is_floating(t))
    throw InvalidArgument(fmt::format("{}: a floating dtype only, not {}", kernel, to_string(t)));
}

// `v` itself when contiguous, else a contiguous device copy held in `keep`.
TensorView packed(const TensorView& v, std::unique_ptr<DeviceScratch>& keep, const On& on) {
  if (v.is_contiguous()) return v;
  keep = std::make_unique<DeviceScratch>(on.device, std::size_t(v.size()) * size_of(v.dtype));
  const TensorView c = contiguous_like(v, keep->get(), v.dtype);
  kernels::copy(v, c, on.stream);
  return c;
}

// A [rows, cols] view with its last axis contiguous: `v` itself, or a copy.
TensorView rows_packed(const TensorView& v, std::unique_ptr<DeviceScratch>& keep, const On& on) {
  if (v.rank < 2 || v.shape[1] <= 1 || v.strides[1] == 1) return v;
  return packed(v, keep, on);
}


// The indices (any integer dtype, any strides; at least one) as contiguous
// int64: `indices` itself when they are, else a copy held in `keep`.
const std::int64_t* int64_indices(const TensorView& indices, const char* kernel, const On& on,
                                  std::unique_ptr<DeviceScratch>& keep) {
  if (is_floating(indices.dtype) || indices.dtype == DataType::boolean)
    throw InvalidArgument(fmt::format("{}: indices must be integers, not {}", kernel, to_string(indices.dtype)));
  if (indices.dtype == DataType::int64 && indices.is_contiguous()) return static_cast<const std::int64_t*>(indices.data);
  keep = std::make_unique<DeviceScratch>(on.device, std::size_t(indices.size()) * sizeof(std::int64_t));
  kernels::copy(indices, contiguous_like(indices, keep->get(), DataType::int64), on.stream);
  return static_cast<const std::int64_t*>(keep->get());
}

// Checks the packed indices `idx` against [0, rows), reading the verdict
// back (a wait): InvalidArgument names the first bad one by position, its
// value and the weight's rows, as the CPU. Under a capture the check cannot
// read back (Note [Unchecked in a graph] in cuda_context.hpp): the kernels
// then skip a bad index instead.
void check_in_range(const TensorView& indices, const std::int64_t* idx, std::int64_t rows, const On& on) {
  const std::int64_t count = indices.size();
  std::int64_t* err = reset_error_slot(on.device);
  kernels::check_indices(idx, count, rows, err, on.stream);
  std::int64_t from_end = 0;
  if (read_error_slot(on.device, from_end)) {
    const std::int64_t at = count - from_end;
    std::int64_t value = 0;
    CUDA_CHECK(cudaMemcpyAsync(&value, idx + at, sizeof value, cudaMemcpyDeviceToHost, on.stream));
    CUDA_CHECK(cudaStreamSynchronize(on.stream));
    throw_embedding_index(indices, at, value, rows);
  }
}

// Whether an embedding entry point checks its indices itself: the
// *_in_range entries are called with indices their caller checked.
enum class Indices : bool { to_check, in_range };

void embed(const TensorView& indices, const TensorView& weight, const TensorView& out, Indices given) {
  check_floating(weight.dtype, "embedding");
  if (indices.size() == 0) return;
  On on(indices);
  std::unique_ptr<DeviceScratch> keep;
  const std::int64_t* idx = int64_indices(indices, "embedding", on, keep);
  if (given == Indices::to_check) check_in_range(indices, idx, weight.shape[0], on);
  if (out.size() > 0) kernels::embedding(idx, indices.size(), weight, out, on.stream);
}

void embed_backward(const TensorView& indices, const TensorView& g, const TensorView& dweight, Indices given) {
  check_floating(dweight.dtype, "embedding_backward");
  if (indices.size() == 0) {
    if (dweight.size() == 0) return;
    On on(dweight);
    kernels::fill(dweight, 0.0, on.stream);
    return;
  }
  On on(indices);
  std::unique_ptr<DeviceScratch> keep;
  const std::int64_t* idx = int64_indices(indices, "embedding_backward", on, keep);
  if (given == Indices::to_check) check_in_range(indices, idx, dweight.shape[0], on);
  if (dweight.size() > 0) kernels::embedding_backward(idx, indices.size(), g, dweight, on.device, on.stream);
}

}  // namespace

bool CudaEngine::conv2d_direct(const TensorView& x, const TensorView& weight, const TensorView* bias,
                               const Window2d& w, const TensorView& y) {
  if (!cudnn_conv2d(x, weight, w, y)) return false;
  if (bias) {  // broadcast over images and pixels, as conv2d adds it after im2col's product
    TensorView b = *bias;
    b.rank = 4;
    const std::int64_t strides[4] = {0, bias->strides[0], 0, 0};
    for (int i = 0; i < 4; ++i) b.shape[i] = y.shape[i], b.strides[i] = strides[i];
    binary(ops::Binary::add, y, b, y);
  }
  return true;
}

bool CudaEngine::conv2d_backward_data_direct(const TensorView& g, const TensorView& weight, const Window2d& w,
                                             const TensorView& dx) {
  return cudnn_conv2d_backward_data(g, weight, w, dx);
}

bool CudaEngine::conv2d_backward_weight_direct(const TensorView& x, const TensorView& g, const Window2d& w,
                                               const TensorView& dweight) {
  return cudnn_conv2d_backward_weight(x, g, w, dweight);
}

void CudaEngine::im2col(const TensorView& x, const Window2d& w, const TensorView& col) {
  check_floating_16(x.dtype, "im2col");
  if (col.size() == 0) return;
  On on(col);
  kernels::im2col(x, w, col, on.stream);
}

void CudaEngine::col2im(const TensorView& col, const Window2d& w, const TensorView& dx) {
  check_floating_16(dx.dtype, "col2im");
  if (dx.size() == 0) return;
  On on(dx);
  if (col.size() == 0) {  // no output positions: nothing reaches any pixel
    kernels::fill(dx, 0.0, on.stream);
    return;
  }
  std::unique_ptr<DeviceScratch> keep;
  kernels::col2im(packed(col, keep, on), w, dx, on.stream);
}

void CudaEngine::pool2d(bool max, const TensorView& x, const Window2d& w, const TensorView& out) {
  check_floating_16(x.dtype, "pool2d");
  if (out.size() == 0) return;
  On on(out);
  kernels::pool2d(max, x, w, out, on.stream);
}

void CudaEngine::pool2d_backward(bool max, const TensorView& x, const TensorView& g, const Window2d& w,
                                 const TensorView& dx) {
  check_floating_16(x.dtype, "pool2d_backward");
  if (dx.size() == 0) return;
  On on(dx);
  if (g.size() == 0) {
    kernels::fill(dx, 0.0, on.stream);
    return;
  }
  kernels::pool2d_backward(max, x, g, w, dx, on.stream);
}

void CudaEngine::gelu(const TensorView& x, const TensorView& out) {
  check_floating_16(x.dtype, "gelu");
  if (out.size() == 0) return;
  On on(out);
  kernels::gelu(x, out, on.stream);
}

void CudaEngine::gelu_backward(const TensorView& x, const TensorView& g, const TensorView& dx) {
  check_floating_16(x.dtype, "gelu_backward");
  if (dx.size() == 0) return;
  On on(dx);
  kernels::gelu_backward(x, g, dx, on.stream);
}

void CudaEngine::dropout(const TensorView& x, double p, const ops::RandomDraw& draw, const TensorView& out) {
  check_floating_16(x.dtype, "dropout");
  if (out.size() == 0) return;
  On on(out);
  check_draw(on.device, "dropout", draw);
  kernels::dropout(x, p, draw, out, on.stream);
}

void CudaEngine::embedding(const TensorView& indices, const TensorView& weight, const TensorView& out) {
  embed(indices, weight, out, Indices::to_check);
}

void CudaEngine::embedding_backward(const TensorView& indices, const TensorView& g, const TensorView& dweight) {
  embed_backward(indices, g, dweight, Indices::to_check);
}

void CudaEngine::embedding_in_range(const TensorView& indices, const TensorView& weight, const TensorView& out) {
  embed(indices, weight, out, Indices::in_range);
}

void CudaEngine::embedding_backward_in_range(const TensorView& indices, const TensorView& g,
                                             const TensorView& dweight) {
  embed_backward(indices, g, dweight, Indices::in_range);
}

void CudaEngine::layer_norm(const TensorView& x, const TensorView& gamma, const TensorView& beta, double eps,
                            const TensorView& out) {
  check_floating(x.dtype, "layer_norm");
  if (out.size() == 0) return;
  On on(out);
  std::unique_ptr<DeviceScratch> kx;
  kernels::layer_norm(packed(x, kx, on), gamma, beta, eps, out, on.stream);
}

void CudaEngine::layer_norm_backward(const TensorView& x, const TensorView& gamma, const TensorView& g, double eps,
                                     const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta) {
  check_floating(x.dtype, "layer_norm_backward");
  if (x.size() == 0) return;
  On on(x);
  std::unique_ptr<DeviceScratch> kx, kg;
  kernels::layer_norm_backward(packed(x, kx, on), gamma, packed(g, kg, on), eps, dx, dgamma, dbeta, on.device,
                               on.stream);
}

void CudaEngine::batch_norm_stats(const TensorView& x, const TensorView& mean, const TensorView& var) {
  check_floating_16(x.dtype, "batch_norm_stats");
  if (mean.size() == 0) return;
  On on(mean);
  if (x.size() == 0) {  // no values per channel: the CPU's 0 and 0
    kernels::fill(mean, 0.0, on.stream);
    kernels::fill(var, 0.0, on.stream);
    return;
  }
  std::unique_ptr<DeviceScratch> kx;
  kernels::batch_norm_stats(packed(x, kx, on), mean, var, on.device, on.stream);
}

void CudaEngine::batch_norm(const TensorView& x, const TensorView& mean, const TensorView& var,
                            const TensorView& gamma, const TensorView& beta, double eps, const TensorView& out) {
  check_floating_16(x.dtype, "batch_norm");
  if (out.size() == 0) return;
  On on(out);
  std::unique_ptr<DeviceScratch> kx;
  kernels::batch_norm(packed(x, kx, on), mean, var, gamma, beta, eps, out, on.stream);
}

void CudaEngine::batch_norm_backward(const TensorView& x, const TensorView& mean, const TensorView& var,
                                     const TensorView& gamma, const TensorView& g, double eps, bool training,
                                     const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta) {
  check_floating_16(x.dtype, "batch_norm_backward");
  if (x.size() == 0) return;
  On on(x);
  std::unique_ptr<DeviceScratch> kx, kg;
  kernels::batch_norm_backward(packed(x, kx, on), mean, var, gamma, packed(g, kg, on), eps, training, dx, dgamma,
                               dbeta, on.device, on.stream);
}

void CudaEngine::lstm_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& c,
                           const TensorView& out) {
  check_floating(c.dtype, "lstm_cell");
  if (out.size() == 0) return;
  On on(out);
  std::unique_ptr<DeviceScratch> ki, kh, kc;
  kernels::lstm_cell(rows_packed(input_gates, ki, on), rows_packed(hidden_gates, kh, on), rows_packed(c, kc, on),
                     out, on.stream);
}

void CudaEngine::lstm_cell_backward(const TensorView& input_gates, const TensorView& hidden_gates,
                                    const TensorView& c, const TensorView& g, const TensorView& d_input_gates,
                                    const TensorView& d_hidden_gates, const TensorView& dc) {
  check_floating(c.dtype, "lstm_cell_backward");
  if (c.size() == 0) return;
  On on(c);
  std::unique_ptr<DeviceScratch> ki, kh, kc, kg;
  kernels::lstm_cell_backward(rows_packed(input_gates, ki, on), rows_packed(hidden_gates, kh, on),
                              rows_packed(c, kc, on), packed(g, kg, on), d_input_gates, d_hidden_gates, dc,
                              on.stream);
}

}  // namespace ndgc::cuda
