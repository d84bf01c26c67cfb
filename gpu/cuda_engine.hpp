// The CUDA engine: every op of ops/engine.hpp on the GPU, the twin of
// src/ops/cpu/cpu_engine.hpp. Kernels in *_kernels.cu (twins by name of
// src/ops/cpu/*_kernels.cpp), matrix products on cuBLAS; the layer kernels'
// entry points are in cuda_engine_layers.cpp.
//
// Each entry point finds the device of its output (cuda_context.hpp), queues
// its kernels on that device's stream and returns without waiting, except
// to_host (the caller reads the result), and ops whose kernels validate
// values (integer division by zero, a one_hot index out of range), which
// synchronise to throw InvalidArgument. See Note [One stream per device].
// Thread-safe: no state of its own; per-thread cuBLAS handles.
#pragma once

#include "ops/engine.hpp"

namespace ndgc::cuda {

class CudaEngine final : public ops::Engine {
 public:
  Device device_of(const ops::TensorView& view) const override;
  bool begin_capture(Device device) override;
  std::unique_ptr<ops::CapturedGraph> end_capture(Device device) override;
  void fill(const ops::TensorView& out, double value) override;
  void arange(const ops::TensorView& out, double start, double step) override;
  void eye(const ops::TensorView& out) override;
  void random_uniform(const ops::TensorView& out, double low, double high, const ops::RandomDraw& draw) override;
  void random_normal(const ops::TensorView& out, double mean, double stddev, const ops::RandomDraw& draw) override;
  void set_draw_state(const ops::TensorView& state, std::uint64_t seed, std::uint64_t base) override;
  void copy(const ops::TensorView& in, const ops::TensorView& out) override;
  void unary(ops::Unary op, const ops::TensorView& in, const ops::TensorView& out) override;
  void binary(ops::Binary op, const ops::TensorView& a, const ops::TensorView& b,
              const ops::TensorView& out) override;
  void binary_scalar(ops::Binary op, const ops::TensorView& a, double s, bool scalar_left,
                     const ops::TensorView& out) override;
  void where(const ops::TensorView& condition, const ops::TensorView& a, const ops::TensorView& b,
             const ops::TensorView& out) override;
  void reduce(ops::Reduce op, const ops::TensorView& in, std::uint32_t axes, const ops::TensorView& out) override;
  void arg_reduce(bool max, const ops::TensorView& in, int axis, const ops::TensorView& out) override;
  void matmul(const ops::TensorView& a, const ops::TensorView& b, const ops::TensorView& out) override;
  bool matmul_add(const ops::TensorView& a, const ops::TensorView& b, const ops::TensorView& out) override;
  bool has_matmul_add(const ops::TensorView& a, const ops::TensorView& b, const ops::TensorView& out) const override;
  bool matmul_16(const ops::TensorView& a, const ops::TensorView& b, const ops::TensorView& out) override;
  void softmax(const ops::TensorView& in, int axis, bool log, const ops::TensorView& out) override;
  void one_hot(const ops::TensorView& indices, std::int64_t depth, const ops::TensorView& out) override;
  void to_host(const ops::TensorView& in, const ops::TensorView& host_out) override;
  void from_host(const ops::TensorView& host_in, const ops::TensorView& out) override;
  bool adam_update(const ops::TensorView& weight, const ops::TensorView& grad, const ops::TensorView& mean,
                   const ops::TensorView& variance, const ops::AdamHyper& hyper) override;
  bool sgd_update(const ops::TensorView& weight, const ops::TensorView& grad, const ops::TensorView& momentum,
                  const ops::SgdHyper& hyper) override;

  // The layer kernels (issue 27), defined in cuda_engine_layers.cpp.
  bool has_layer_kernels() const noexcept override { return true; }
  bool kernels_16() const noexcept override { return true; }
  bool batch_norm_16() const noexcept override { return true; }
  // Convolutions through cuDNN where it serves the views (cudnn_conv.hpp), else false: im2col.
  bool conv2d_direct(const ops::TensorView& x, const ops::TensorView& weight, const ops::TensorView* bias,
                     const ops::Window2d& w, const ops::TensorView& y) override;
  bool conv2d_backward_data_direct(const ops::TensorView& g, const ops::TensorView& weight, const ops::Window2d& w,
                                   const ops::TensorView& dx) override;
  bool conv2d_backward_weight_direct(const ops::TensorView& x, const ops::TensorView& g, const ops::Window2d& w,
                                     const ops::TensorView& dweight) override;
  bool has_conv2d_gradients() const noexcept override { return true; }
  bool conv2d_16() const noexcept override { return true; }
  void im2col(const ops::TensorView& x, const ops::Window2d& w, const ops::TensorView& col) override;
  void col2im(const ops::TensorView& col, const ops::Window2d& w, const ops::TensorView& dx) override;
  void pool2d(bool max, const ops::TensorView& x, const ops::Window2d& w, const ops::TensorView& out) override;
  void pool2d_backward(bool max, const ops::TensorView& x, const ops::TensorView& g, const ops::Window2d& w,
                       const ops::TensorView& dx) override;
  void gelu(const ops::TensorView& x, const ops::TensorView& out) override;
  void gelu_backward(const ops::TensorView& x, const ops::TensorView& g, const ops::TensorView& dx) override;
  void dropout(const ops::TensorView& x, double p, const ops::RandomDraw& draw, const ops::TensorView& out) override;
  void embedding(const ops::TensorView& indices, const ops::TensorView& weight, const ops::TensorView& out) override;
  void embedding_backward(const ops::TensorView& indices, const ops::TensorView& g,
                          const ops::TensorView& dweight) override;
  void embedding_in_range(const ops::TensorView& indices, const ops::TensorView& weight,
                          const ops::TensorView& out) override;
  void embedding_backward_in_range(const ops::TensorView& indices, const ops::TensorView& g,
                                   const ops::TensorView& dweight) override;
  void layer_norm(const ops::TensorView& x, const ops::TensorView& gamma, const ops::TensorView& beta, double eps,
                  const ops::TensorView& out) override;
  void layer_norm_backward(const ops::TensorView& x, const ops::TensorView& gamma, const ops::TensorView& g,
                           double eps, const ops::TensorView& dx, const ops::TensorView& dgamma,
                           const ops::TensorView& dbeta) override;
  void batch_norm_stats(const ops::TensorView& x, const ops::TensorView& mean, const ops::TensorView& var) override;
  void batch_norm(const ops::TensorView& x, const ops::TensorView& mean, const ops::TensorView& var,
                  const ops::TensorView& gamma, const ops::TensorView& beta, double eps,
                  const ops::TensorView& out) override;
  void batch_norm_backward(const ops::TensorView& x, const ops::TensorView& mean, const ops::TensorView& var,
                           const ops::TensorView& gamma, const ops::TensorView& g, double eps, bool training,
                           const ops::TensorView& dx, const ops::TensorView& dgamma,
                           const ops::TensorView& dbeta) override;
  void lstm_cell(const ops::TensorView& input_gates, const ops::TensorView& hidden_gates, const ops::TensorView& c,
                 const ops::TensorView& out) override;
  void lstm_cell_backward(const ops::TensorView& input_gates, const ops::TensorView& hidden_gates,
                          const ops::TensorView& c, const ops::TensorView& g, const ops::TensorView& d_input_gates,
                          const ops::TensorView& d_hidden_gates, const ops::TensorView& dc) override;
};

CudaEngine& cuda_engine() noexcept;

}  // namespace ndgc::cuda
