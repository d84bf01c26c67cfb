// The CPU engine: kernels on Eigen for every op of ops/engine.hpp.
//
// Contiguous float32/float64 rows go through Eigen maps (explicitly
// vectorised, including exp, log, tanh and the logistic function); matmul is
// Eigen's blocked GEMM; other dtypes and strided rows run typed loops over
// for_each_row (strided.hpp). Single-threaded: one op runs on the calling
// thread, so several threads can run ops side by side.
#pragma once

#include <initializer_list>

#include <memory>
#include <optional>

#include "ops/engine.hpp"

namespace ndgc::ops::cpu {

class CpuEngine final : public Engine {
 public:
  void fill(const TensorView& out, double value) override;
  void arange(const TensorView& out, double start, double step) override;
  void eye(const TensorView& out) override;
  void random_uniform(const TensorView& out, double low, double high, const RandomDraw& draw) override;
  void random_normal(const TensorView& out, double mean, double stddev, const RandomDraw& draw) override;
  void copy(const TensorView& in, const TensorView& out) override;
  void unary(Unary op, const TensorView& in, const TensorView& out) override;
  void binary(Binary op, const TensorView& a, const TensorView& b, const TensorView& out) override;
  void binary_scalar(Binary op, const TensorView& a, double s, bool scalar_left, const TensorView& out) override;
  void where(const TensorView& condition, const TensorView& a, const TensorView& b,
             const TensorView& out) override;
  bool relu_backward(const TensorView& x, const TensorView& g, const TensorView& out) override;
  void reduce(Reduce op, const TensorView& in, std::uint32_t axes, const TensorView& out) override;
  void arg_reduce(bool max, const TensorView& in, int axis, const TensorView& out) override;
  void matmul(const TensorView& a, const TensorView& b, const TensorView& out) override;
  bool matmul_add(const TensorView& a, const TensorView& b, const TensorView& out) override;
  bool has_matmul_add(const TensorView& a, const TensorView& b, const TensorView& out) const override {
    return serves_matmul_add(a, b, out);
  }
  bool matmul_16(const TensorView& a, const TensorView& b, const TensorView& out) override;  // bf16_matmul.cpp
  bool batch_norm_16() const noexcept override { return true; }  // norm_kernels.cpp
  void softmax(const TensorView& in, int axis, bool log, const TensorView& out) override;
  bool sparse_softmax_cross_entropy(const TensorView& logits, const TensorView& labels,
                                    const TensorView& loss) override;
  bool sparse_softmax_cross_entropy_backward(const TensorView& logits, const TensorView& labels,
                                             const TensorView& g, const TensorView& grad) override;
  void one_hot(const TensorView& indices, std::int64_t depth, const TensorView& out) override;
  void to_host(const TensorView& in, const TensorView& host_out) override { copy(in, host_out); }
  void from_host(const TensorView& host_in, const TensorView& out) override { copy(host_in, out); }
  bool adam_update(const TensorView& weight, const TensorView& grad, const TensorView& mean,
                   const TensorView& variance, const AdamHyper& hyper) override;
  bool sgd_update(const TensorView& weight, const TensorView& grad, const TensorView& momentum,
                  const SgdHyper& hyper) override;

  // Layer kernels: ops/cpu/conv_kernels.cpp, pool_kernels.cpp, norm_kernels.cpp, layer_kernels.cpp,
  // lstm_kernels.cpp.
  bool has_layer_kernels() const noexcept override { return true; }
  std::int64_t im2col_images(std::int64_t images, std::int64_t bytes) const noexcept override;
  bool conv2d_direct(const TensorView& x, const TensorView& weight, const TensorView* bias, const Window2d& w,
                     const TensorView& y) override;  // oneDNN's (onednn_conv.cpp)
  bool conv2d_16() const noexcept override;     // bfloat16 through oneDNN, where the CPU has AVX512-BF16
  void im2col(const TensorView& x, const Window2d& w, const TensorView& col) override;
  void col2im(const TensorView& col, const Window2d& w, const TensorView& dx) override;
  void pool2d(bool max, const TensorView& x, const Window2d& w, const TensorView& out) override;
  void pool2d_backward(bool max, const TensorView& x, const TensorView& g, const Window2d& w,
                       const TensorView& dx) override;
  void gelu(const TensorView& x, const TensorView& out) override;
  void gelu_backward(const TensorView& x, const TensorView& g, const TensorView& dx) override;
  void dropout(const TensorView& x, double p, const RandomDraw& draw, const TensorView& out) override;
  void embedding(const TensorView& indices, const TensorView& weight, const TensorView& out) override;
  void embedding_backward(const TensorView& indices, const TensorView& g, const TensorView& dweight) override;
  void layer_norm(const TensorView& x, const TensorView& gamma, const TensorView& beta, double eps,
                  const TensorView& out) override;
  void layer_norm_backward(const TensorView& x, const TensorView& gamma, const TensorView& g, double eps,
                           const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta) override;
  void batch_norm_stats(const TensorView& x, const TensorView& mean, const TensorView& var) override;
  void batch_norm(const TensorView& x, const TensorView& mean, const TensorView& var, const TensorView& gamma,
                  const TensorView& beta, double eps, const TensorView& out) override;
  void batch_norm_backward(const TensorView& x, const TensorView& mean, const TensorView& var,
                           const TensorView& gamma, const TensorView& g, double eps, bool training,
                           const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta) override;
  void lstm_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& c,
                 const TensorView& out) override;
  void lstm_cell_backward(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& c,
                          const TensorView& g, const TensorView& d_input_gates, const TensorView& d_hidden_gates,
                          const TensorView& dc) override;

  // Whether each optional kernel above serves these views: the kernel
  // returns exactly this, decided before it writes anything, so a caller may
  // ask first (the simulated GPU records calls during a capture without
  // running them: tests/sim_gpu.hpp).
  static bool serves_relu_backward(const TensorView& x, const TensorView& g, const TensorView& out) noexcept;
  static bool serves_matmul_add(const TensorView& a, const TensorView& b, const TensorView& out) noexcept;
  static bool serves_cross_entropy(const TensorView& logits, const TensorView& labels) noexcept;
  static bool serves_cross_entropy_backward(const TensorView& logits, const TensorView& labels,
                                            const TensorView& grad) noexcept;
  // The fused updates: weight first, then the views of its shape (an empty momentum left out).
  static bool serves_update(std::initializer_list<const TensorView*> views) noexcept;
};

CpuEngine& cpu_engine() noexcept;

// A contiguous scratch copy of `in` (same dtype), for kernels that need rows.
class Scratch {
 public:
  Scratch(const TensorView& like);  // allocates like.size() elements, contiguous shape of `like`
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const TensorView& view() const noexcept { return view_; }

 private:
  TensorView view_;
};

// `in` itself if contiguous, else a contiguous copy held in `scratch` (an
// optional, not a heap object: a kernel that copies makes no heap allocation
// beyond the cached buffer).
const TensorView& contiguous_or_copy(const TensorView& in, std::optional<Scratch>& scratch);

}  // namespace ndgc::ops::cpu
