// The GPU write epoch and the engine wrapper that advances it.
//
// The epoch advances *after* each call returns (or throws), never before:
// a reader loads the epoch, then copies. A write issued before the load is
// in the copy (the copy synchronises the stream that wrote); a write issued
// after it advances the epoch past the loaded value, so the next read sees a
// stale mirror and copies again. Advancing before issuing would let a copy
// taken between the two keep a value the write then changes.
#include "ops/gpu_writes.hpp"

#include <atomic>

#include "ops/engine.hpp"

namespace ndgc::ops {
namespace {

std::atomic<std::uint64_t> g_epoch{1};

// A replay writes whatever its kernels write.
class WriteCountingGraph final : public CapturedGraph {
 public:
  explicit WriteCountingGraph(std::unique_ptr<CapturedGraph> inner) : inner_(std::move(inner)) {}
  void replay() override {
    CountsAsGpuWrite w;
    inner_->replay();
  }

 private:
  std::unique_ptr<CapturedGraph> inner_;
};

class WriteCountingEngine final : public Engine {
 public:
  std::atomic<Engine*> wrapped{nullptr};

  Engine* target() const noexcept { return wrapped.load(std::memory_order_relaxed); }

  Device device_of(const TensorView& v) const override { return target()->device_of(v); }
  bool begin_capture(Device device) override { return target()->begin_capture(device); }
  std::unique_ptr<CapturedGraph> end_capture(Device device) override {
    std::unique_ptr<CapturedGraph> g = target()->end_capture(device);
    return g ? std::make_unique<WriteCountingGraph>(std::move(g)) : nullptr;
  }

  void fill(const TensorView& out, double value) override {
    CountsAsGpuWrite w;
    target()->fill(out, value);
  }
  void arange(const TensorView& out, double start, double step) override {
    CountsAsGpuWrite w;
    target()->arange(out, start, step);
  }
  void eye(const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->eye(out);
  }
  void random_uniform(const TensorView& out, double low, double high, const RandomDraw& draw) override {
    CountsAsGpuWrite w;
    target()->random_uniform(out, low, high, draw);
  }
  void random_normal(const TensorView& out, double mean, double stddev, const RandomDraw& draw) override {
    CountsAsGpuWrite w;
    target()->random_normal(out, mean, stddev, draw);
  }
  void set_draw_state(const TensorView& state, std::uint64_t seed, std::uint64_t base) override {
    CountsAsGpuWrite w;
    target()->set_draw_state(state, seed, base);
  }
  void copy(const TensorView& in, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->copy(in, out);
  }
  void unary(Unary op, const TensorView& in, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->unary(op, in, out);
  }
  void binary(Binary op, const TensorView& a, const TensorView& b, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->binary(op, a, b, out);
  }
  void binary_scalar(Binary op, const TensorView& a, double s, bool scalar_left, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->binary_scalar(op, a, s, scalar_left, out);
  }
  void where(const TensorView& condition, const TensorView& a, const TensorView& b, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->where(condition, a, b, out);
  }
  bool relu_backward(const TensorView& x, const TensorView& g, const TensorView& out) override {
    CountsAsGpuWrite w;
    return target()->relu_backward(x, g, out);
  }
  void reduce(Reduce op, const TensorView& in, std::uint32_t axes, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->reduce(op, in, axes, out);
  }
  void arg_reduce(bool max, const TensorView& in, int axis, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->arg_reduce(max, in, axis, out);
  }
  void matmul(const TensorView& a, const TensorView& b, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->matmul(a, b, out);
  }
  bool matmul_add(const TensorView& a, const TensorView& b, const TensorView& out) override {
    CountsAsGpuWrite w;
    return target()->matmul_add(a, b, out);
  }
  bool has_matmul_add(const TensorView& a, const TensorView& b, const TensorView& out) const override {
    return target()->has_matmul_add(a, b, out);  // a question: writes nothing
  }
  bool conv2d_direct(const TensorView& x, const TensorView& weight, const TensorView* bias, const Window2d& win,
                     const TensorView& y) override {
    CountsAsGpuWrite w;
    return target()->conv2d_direct(x, weight, bias, win, y);
  }
  bool conv2d_backward_data_direct(const TensorView& g, const TensorView& weight, const Window2d& win,
                                   const TensorView& dx) override {
    CountsAsGpuWrite w;
    return target()->conv2d_backward_data_direct(g, weight, win, dx);
  }
  bool conv2d_backward_weight_direct(const TensorView& x, const TensorView& g, const Window2d& win,
                                     const TensorView& dweight) override {
    CountsAsGpuWrite w;
    return target()->conv2d_backward_weight_direct(x, g, win, dweight);
  }
  bool conv2d_16() const noexcept override { return target()->conv2d_16(); }
  bool has_conv2d_gradients() const noexcept override { return target()->has_conv2d_gradients(); }
  void softmax(const TensorView& in, int axis, bool log, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->softmax(in, axis, log, out);
  }
  bool sparse_softmax_cross_entropy(const TensorView& logits, const TensorView& labels,
                                    const TensorView& loss) override {
    CountsAsGpuWrite w;
    return target()->sparse_softmax_cross_entropy(logits, labels, loss);
  }
  bool sparse_softmax_cross_entropy_backward(const TensorView& logits, const TensorView& labels, const TensorView& g,
                                             const TensorView& grad) override {
    CountsAsGpuWrite w;
    return target()->sparse_softmax_cross_entropy_backward(logits, labels, g, grad);
  }
  void one_hot(const TensorView& indices, std::int64_t depth, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->one_hot(indices, depth, out);
  }
  // The one call that only reads GPU memory.
  void to_host(const TensorView& in, const TensorView& host_out) override { target()->to_host(in, host_out); }
  void from_host(const TensorView& host_in, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->from_host(host_in, out);
  }
  bool adam_update(const TensorView& weight, const TensorView& grad, const TensorView& mean,
                   const TensorView& variance, const AdamHyper& hyper) override {
    CountsAsGpuWrite w;
    return target()->adam_update(weight, grad, mean, variance, hyper);
  }
  bool sgd_update(const TensorView& weight, const TensorView& grad, const TensorView& momentum,
                  const SgdHyper& hyper) override {
    CountsAsGpuWrite w;
    return target()->sgd_update(weight, grad, momentum, hyper);
  }

  // The layer kernels (issue 27): forwarded, so that an engine that has them is reached.
  bool has_layer_kernels() const noexcept override { return target()->has_layer_kernels(); }
  bool batch_norm_16() const noexcept override { return target()->batch_norm_16(); }
  bool kernels_16() const noexcept override { return target()->kernels_16(); }
  std::int64_t im2col_images(std::int64_t images, std::int64_t bytes) const noexcept override {
    return target()->im2col_images(images, bytes);
  }
  void im2col(const TensorView& x, const Window2d& win, const TensorView& col) override {
    CountsAsGpuWrite w;
    target()->im2col(x, win, col);
  }
  void col2im(const TensorView& col, const Window2d& win, const TensorView& dx) override {
    CountsAsGpuWrite w;
    target()->col2im(col, win, dx);
  }
  void pool2d(bool max, const TensorView& x, const Window2d& win, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->pool2d(max, x, win, out);
  }
  void pool2d_backward(bool max, const TensorView& x, const TensorView& g, const Window2d& win,
                       const TensorView& dx) override {
    CountsAsGpuWrite w;
    target()->pool2d_backward(max, x, g, win, dx);
  }
  void gelu(const TensorView& x, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->gelu(x, out);
  }
  void gelu_backward(const TensorView& x, const TensorView& g, const TensorView& dx) override {
    CountsAsGpuWrite w;
    target()->gelu_backward(x, g, dx);
  }
  void dropout(const TensorView& x, double p, const RandomDraw& draw, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->dropout(x, p, draw, out);
  }
  void embedding(const TensorView& indices, const TensorView& weight, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->embedding(indices, weight, out);
  }
  void embedding_backward(const TensorView& indices, const TensorView& g, const TensorView& dweight) override {
    CountsAsGpuWrite w;
    target()->embedding_backward(indices, g, dweight);
  }
  void embedding_in_range(const TensorView& indices, const TensorView& weight, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->embedding_in_range(indices, weight, out);
  }
  void embedding_backward_in_range(const TensorView& indices, const TensorView& g,
                                   const TensorView& dweight) override {
    CountsAsGpuWrite w;
    target()->embedding_backward_in_range(indices, g, dweight);
  }
  void layer_norm(const TensorView& x, const TensorView& gamma, const TensorView& beta, double eps,
                  const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->layer_norm(x, gamma, beta, eps, out);
  }
  void layer_norm_backward(const TensorView& x, const TensorView& gamma, const TensorView& g, double eps,
                           const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta) override {
    CountsAsGpuWrite w;
    target()->layer_norm_backward(x, gamma, g, eps, dx, dgamma, dbeta);
  }
  void batch_norm_stats(const TensorView& x, const TensorView& mean, const TensorView& var) override {
    CountsAsGpuWrite w;
    target()->batch_norm_stats(x, mean, var);
  }
  void batch_norm(const TensorView& x, const TensorView& mean, const TensorView& var, const TensorView& gamma,
                  const TensorView& beta, double eps, const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->batch_norm(x, mean, var, gamma, beta, eps, out);
  }
  void batch_norm_backward(const TensorView& x, const TensorView& mean, const TensorView& var,
                           const TensorView& gamma, const TensorView& g, double eps, bool training,
                           const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta) override {
    CountsAsGpuWrite w;
    target()->batch_norm_backward(x, mean, var, gamma, g, eps, training, dx, dgamma, dbeta);
  }
  void lstm_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& c,
                 const TensorView& out) override {
    CountsAsGpuWrite w;
    target()->lstm_cell(input_gates, hidden_gates, c, out);
  }
  void lstm_cell_backward(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& c,
                          const TensorView& g, const TensorView& d_input_gates, const TensorView& d_hidden_gates,
                          const TensorView& dc) override {
    CountsAsGpuWrite w;
    target()->lstm_cell_backward(input_gates, hidden_gates, c, g, d_input_gates, d_hidden_gates, dc);
  }
};

WriteCountingEngine g_counting;

}  // namespace

void note_gpu_write() noexcept { g_epoch.fetch_add(1, std::memory_order_acq_rel); }
std::uint64_t gpu_write_epoch() noexcept { return g_epoch.load(std::memory_order_acquire); }

Engine* count_gpu_writes(Engine* inner) noexcept {
  // Published by register_engine's release store of the table's pointer.
  g_counting.wrapped.store(inner, std::memory_order_relaxed);
  return inner ? &g_counting : nullptr;
}

}  // namespace ndgc::ops
