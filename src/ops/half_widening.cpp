// The widening engine. See Note [16-bit storage, float32 arithmetic] in
// ops/half_widening.hpp.
#include "ops/half_widening.hpp"

#include <algorithm>
#include <cstddef>

#include "memory/allocator.hpp"

namespace ndgc::ops {
namespace {

bool half(const TensorView& v) noexcept { return v.data != nullptr && is_half(v.dtype); }

template <class... V>
bool any_half(const V&... views) noexcept {
  return (half(views) || ...);
}

enum class Role { in, out };

// One operand of a call as float32: the view itself when it is not 16-bit,
// otherwise a contiguous float32 scratch buffer on the view's device, filled
// from the view for an input. store() narrows an output back; it is explicit
// so that a kernel that throws leaves its output as it was.
class Wide {
 public:
  Wide(Engine& inner, const TensorView& v, Role role) : inner_(inner), original_(v), view_(v) {
    if (!half(v)) return;
    device_ = inner.device_of(v);
    view_ = v;
    view_.dtype = DataType::float32;
    bytes_ = std::size_t(v.size()) * sizeof(float);
    view_.data = memory::allocator(device_).allocate(bytes_);
    std::int64_t stride = 1;
    for (int i = v.rank - 1; i >= 0; --i) {
      view_.strides[i] = stride;
      stride *= v.shape[i];
    }
    if (role == Role::in) inner.copy(v, view_);
  }
  ~Wide() {
    if (bytes_) memory::allocator(device_).deallocate(view_.data, bytes_);
  }
  Wide(const Wide&) = delete;
  Wide& operator=(const Wide&) = delete;

  operator const TensorView&() const noexcept { return view_; }
  void store() {
    if (view_.data != original_.data) inner_.copy(view_, original_);
  }

 private:
  Engine& inner_;
  TensorView original_, view_;
  Device device_ = Device::cpu();
  std::size_t bytes_ = 0;
};

using R = Role;

// Note [Widening in slices]
// Widening a whole operand costs float32 scratch of its full size: for a
// 16-bit step's activations that is twice their bytes again, per operand, at
// the moment the op runs, and the step's peak grows by it. Where every output
// element depends only on the inputs at its own position along axis 0 (the
// element-wise kernels, and the pools and col2im per image), the call runs
// slice by slice of axis 0 instead, each at most kSliceElements elements, so
// the scratch stays a few hundred KiB (and in cache) whatever the operand's
// size. The float32 kernel computes each element as it would have whole, so
// the bits are the same.
constexpr std::int64_t kSliceElements = std::int64_t(1) << 16;

// f(start, length) over slices of axis 0 of `shape_of` (whole when rank 0 or one row).
template <class F>
void by_slices(const TensorView& shape_of, F&& f) {
  if (shape_of.rank == 0 || shape_of.shape[0] <= 1) return f(std::int64_t(0), shape_of.rank ? shape_of.shape[0] : 1);
  const std::int64_t rows = shape_of.shape[0], per_row = std::max<std::int64_t>(shape_of.size() / rows, 1);
  const std::int64_t step = std::max<std::int64_t>(1, kSliceElements / per_row);
  for (std::int64_t start = 0; start < rows; start += step) f(start, std::min(step, rows - start));
}

// `v` narrowed to [start, start + length) of axis 0, when it has that axis.
TensorView slice(const TensorView& v, std::int64_t start, std::int64_t length) {
  return v.rank == 0 ? v : v.narrow(0, start, length);
}

class HalfWideningEngine final : public Engine {
 public:
  explicit HalfWideningEngine(Engine* inner) : e_(*inner) {}

  Device device_of(const TensorView& v) const override { return e_.device_of(v); }
  bool begin_capture(Device device) override { return e_.begin_capture(device); }
  std::unique_ptr<CapturedGraph> end_capture(Device device) override { return e_.end_capture(device); }
  bool has_layer_kernels() const noexcept override { return e_.has_layer_kernels(); }
  bool batch_norm_16() const noexcept override { return e_.batch_norm_16(); }
  std::int64_t im2col_images(std::int64_t images, std::int64_t bytes) const noexcept override {
    return e_.im2col_images(images, bytes);
  }

  // ---- factories: a float32 result, rounded ----------------------------------
  void fill(const TensorView& out, double value) override {
    if (!half(out)) return e_.fill(out, value);
    Wide o(e_, out, R::out);
    e_.fill(o, value);
    o.store();
  }
  void arange(const TensorView& out, double start, double step) override {
    if (!half(out)) return e_.arange(out, start, step);
    Wide o(e_, out, R::out);
    e_.arange(o, start, step);
    o.store();
  }
  void eye(const TensorView& out) override {
    if (!half(out)) return e_.eye(out);
    Wide o(e_, out, R::out);
    e_.eye(o);
    o.store();
  }
  void random_uniform(const TensorView& out, double low, double high, std::uint64_t seed,
                      std::uint64_t offset) override {
    if (!half(out)) return e_.random_uniform(out, low, high, seed, offset);
    Wide o(e_, out, R::out);
    e_.random_uniform(o, low, high, seed, offset);
    o.store();
  }
  void random_normal(const TensorView& out, double mean, double stddev, std::uint64_t seed,
                     std::uint64_t offset) override {
    if (!half(out)) return e_.random_normal(out, mean, stddev, seed, offset);
    Wide o(e_, out, R::out);
    e_.random_normal(o, mean, stddev, seed, offset);
    o.store();
  }

  // ---- the engine converts these itself ----------------------------------------
  void copy(const TensorView& in, const TensorView& out) override { e_.copy(in, out); }
  void to_host(const TensorView& in, const TensorView& host_out) override { e_.to_host(in, host_out); }
  void from_host(const TensorView& host_in, const TensorView& out) override { e_.from_host(host_in, out); }

  // ---- element-wise ------------------------------------------------------------
  void unary(Unary op, const TensorView& in, const TensorView& out) override {
    if (!any_half(in, out)) return e_.unary(op, in, out);
    by_slices(out, [&](std::int64_t at, std::int64_t n) {  // Note [Widening in slices]
      Wide x(e_, slice(in, at, n), R::in), o(e_, slice(out, at, n), R::out);
      e_.unary(op, x, o);
      o.store();
    });
  }
  void binary(Binary op, const TensorView& a, const TensorView& b, const TensorView& out) override {
    if (!any_half(a, b, out)) return e_.binary(op, a, b, out);
    by_slices(out, [&](std::int64_t at, std::int64_t n) {
      Wide x(e_, slice(a, at, n), R::in), y(e_, slice(b, at, n), R::in), o(e_, slice(out, at, n), R::out);
      e_.binary(op, x, y, o);
      o.store();
    });
  }
  void binary_scalar(Binary op, const TensorView& a, double s, bool scalar_left, const TensorView& out) override {
    if (!any_half(a, out)) return e_.binary_scalar(op, a, s, scalar_left, out);
    by_slices(out, [&](std::int64_t at, std::int64_t n) {
      Wide x(e_, slice(a, at, n), R::in), o(e_, slice(out, at, n), R::out);
      e_.binary_scalar(op, x, s, scalar_left, o);
      o.store();
    });
  }
  void where(const TensorView& condition, const TensorView& a, const TensorView& b, const TensorView& out) override {
    if (!any_half(a, b, out)) return e_.where(condition, a, b, out);
    by_slices(out, [&](std::int64_t at, std::int64_t n) {
      Wide x(e_, slice(a, at, n), R::in), y(e_, slice(b, at, n), R::in), o(e_, slice(out, at, n), R::out);
      e_.where(slice(condition, at, n), x, y, o);
      o.store();
    });
  }
  bool relu_backward(const TensorView& x, const TensorView& g, const TensorView& out) override {
    if (!any_half(x, g, out)) return e_.relu_backward(x, g, out);
    bool served = true;
    by_slices(out, [&](std::int64_t at, std::int64_t n) {
      if (!served) return;
      Wide wx(e_, slice(x, at, n), R::in), wg(e_, slice(g, at, n), R::in), o(e_, slice(out, at, n), R::out);
      served = e_.relu_backward(wx, wg, o);
      if (served) o.store();
    });
    return served;
  }

  // ---- reductions, products, softmax ---------------------------------------------
  void reduce(Reduce op, const TensorView& in, std::uint32_t axes, const TensorView& out) override {
    if (!any_half(in, out)) return e_.reduce(op, in, axes, out);
    Wide x(e_, in, R::in), o(e_, out, R::out);
    e_.reduce(op, x, axes, o);
    o.store();
  }
  void arg_reduce(bool max, const TensorView& in, int axis, const TensorView& out) override {
    if (!half(in)) return e_.arg_reduce(max, in, axis, out);
    Wide x(e_, in, R::in);
    e_.arg_reduce(max, x, axis, out);
  }
  void matmul(const TensorView& a, const TensorView& b, const TensorView& out) override {
    if (!any_half(a, b, out)) return e_.matmul(a, b, out);
    if (e_.matmul_16(a, b, out)) return;
    Wide x(e_, a, R::in), y(e_, b, R::in), o(e_, out, R::out);
    e_.matmul(x, y, o);
    o.store();
  }
  bool matmul_add(const TensorView& a, const TensorView& b, const TensorView& out) override {
    return !any_half(a, b, out) && e_.matmul_add(a, b, out);
  }
  void softmax(const TensorView& in, int axis, bool log, const TensorView& out) override {
    if (!any_half(in, out)) return e_.softmax(in, axis, log, out);
    Wide x(e_, in, R::in), o(e_, out, R::out);  // whole: the kernel's row blocking depends on the row count
    e_.softmax(x, axis, log, o);
    o.store();
  }
  bool sparse_softmax_cross_entropy(const TensorView& logits, const TensorView& labels,
                                    const TensorView& loss) override {
    if (!any_half(logits, labels, loss)) return e_.sparse_softmax_cross_entropy(logits, labels, loss);
    Wide x(e_, logits, R::in), y(e_, labels, R::in), o(e_, loss, R::out);
    if (!e_.sparse_softmax_cross_entropy(x, y, o)) return false;
    o.store();
    return true;
  }
  bool sparse_softmax_cross_entropy_backward(const TensorView& logits, const TensorView& labels,
                                             const TensorView& g, const TensorView& grad) override {
    if (!any_half(logits, labels, g, grad)) return e_.sparse_softmax_cross_entropy_backward(logits, labels, g, grad);
    Wide x(e_, logits, R::in), y(e_, labels, R::in), wg(e_, g, R::in), o(e_, grad, R::out);
    if (!e_.sparse_softmax_cross_entropy_backward(x, y, wg, o)) return false;
    o.store();
    return true;
  }
  void one_hot(const TensorView& indices, std::int64_t depth, const TensorView& out) override {
    if (!any_half(indices, out)) return e_.one_hot(indices, depth, out);
    Wide i(e_, indices, R::in), o(e_, out, R::out);
    e_.one_hot(i, depth, o);
    o.store();
  }

  // Read-and-write operands: composed by the ops layer for 16-bit views.
  bool adam_update(const TensorView& weight, const TensorView& grad, const TensorView& mean,
                   const TensorView& variance, const AdamHyper& hyper) override {
    return !any_half(weight, grad, mean, variance) && e_.adam_update(weight, grad, mean, variance, hyper);
  }
  bool sgd_update(const TensorView& weight, const TensorView& grad, const TensorView& momentum,
                  const SgdHyper& hyper) override {
    return !any_half(weight, grad, momentum) && e_.sgd_update(weight, grad, momentum, hyper);
  }

  // ---- layers --------------------------------------------------------------------
  void im2col(const TensorView& x, const Window2d& w, const TensorView& col) override {
    // Values only move: every engine's im2col takes 16-bit views as they are.
    if (!any_half(x, col) || (x.dtype == col.dtype && half(x) && half(col))) return e_.im2col(x, w, col);
    Wide wx(e_, x, R::in), o(e_, col, R::out);
    e_.im2col(wx, w, o);
    o.store();
  }
  void col2im(const TensorView& col, const Window2d& w, const TensorView& dx) override {
    if (!any_half(col, dx)) return e_.col2im(col, w, dx);
    by_slices(dx, [&](std::int64_t at, std::int64_t n) {  // image by image: col's axis 0 is dx's
      Wide c(e_, slice(col, at, n), R::in), o(e_, slice(dx, at, n), R::out);
      e_.col2im(c, w, o);
      o.store();
    });
  }
  void pool2d(bool max, const TensorView& x, const Window2d& w, const TensorView& out) override {
    if (!any_half(x, out)) return e_.pool2d(max, x, w, out);
    by_slices(x, [&](std::int64_t at, std::int64_t n) {  // image by image
      Wide wx(e_, slice(x, at, n), R::in), o(e_, slice(out, at, n), R::out);
      e_.pool2d(max, wx, w, o);
      o.store();
    });
  }
  void pool2d_backward(bool max, const TensorView& x, const TensorView& g, const Window2d& w,
                       const TensorView& dx) override {
    if (!any_half(x, g, dx)) return e_.pool2d_backward(max, x, g, w, dx);
    by_slices(x, [&](std::int64_t at, std::int64_t n) {
      Wide wx(e_, slice(x, at, n), R::in), wg(e_, slice(g, at, n), R::in), o(e_, slice(dx, at, n), R::out);
      e_.pool2d_backward(max, wx, wg, w, o);
      o.store();
    });
  }
  void gelu(const TensorView& x, const TensorView& out) override {
    if (!any_half(x, out)) return e_.gelu(x, out);
    by_slices(out, [&](std::int64_t at, std::int64_t n) {
      Wide wx(e_, slice(x, at, n), R::in), o(e_, slice(out, at, n), R::out);
      e_.gelu(wx, o);
      o.store();
    });
  }
  void gelu_backward(const TensorView& x, const TensorView& g, const TensorView& dx) override {
    if (!any_half(x, g, dx)) return e_.gelu_backward(x, g, dx);
    by_slices(dx, [&](std::int64_t at, std::int64_t n) {
      Wide wx(e_, slice(x, at, n), R::in), wg(e_, slice(g, at, n), R::in), o(e_, slice(dx, at, n), R::out);
      e_.gelu_backward(wx, wg, o);
      o.store();
    });
  }
  void dropout(const TensorView& x, double p, std::uint64_t seed, std::uint64_t offset,
               const TensorView& out) override {
    if (!any_half(x, out)) return e_.dropout(x, p, seed, offset, out);
    const std::int64_t per_row = out.rank && out.shape[0] ? out.size() / out.shape[0] : 0;
    by_slices(out, [&](std::int64_t at, std::int64_t n) {  // element i draws (seed, offset + i), i row-major
      Wide wx(e_, slice(x, at, n), R::in), o(e_, slice(out, at, n), R::out);
      e_.dropout(wx, p, seed, offset + std::uint64_t(at * per_row), o);
      o.store();
    });
  }
  void embedding(const TensorView& indices, const TensorView& weight, const TensorView& out) override {
    if (!any_half(weight, out)) return e_.embedding(indices, weight, out);
    Wide wt(e_, weight, R::in), o(e_, out, R::out);
    e_.embedding(indices, wt, o);
    o.store();
  }
  void embedding_backward(const TensorView& indices, const TensorView& g, const TensorView& dweight) override {
    if (!any_half(g, dweight)) return e_.embedding_backward(indices, g, dweight);
    Wide wg(e_, g, R::in), o(e_, dweight, R::out);
    e_.embedding_backward(indices, wg, o);
    o.store();
  }
  void layer_norm(const TensorView& x, const TensorView& gamma, const TensorView& beta, double eps,
                  const TensorView& out) override {
    if (!any_half(x, gamma, beta, out)) return e_.layer_norm(x, gamma, beta, eps, out);
    Wide wx(e_, x, R::in), wgm(e_, gamma, R::in), wb(e_, beta, R::in), o(e_, out, R::out);
    e_.layer_norm(wx, wgm, wb, eps, o);
    o.store();
  }
  void layer_norm_backward(const TensorView& x, const TensorView& gamma, const TensorView& g, double eps,
                           const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta) override {
    if (!any_half(x, gamma, g, dx, dgamma, dbeta)) return e_.layer_norm_backward(x, gamma, g, eps, dx, dgamma, dbeta);
    Wide wx(e_, x, R::in), wgm(e_, gamma, R::in), wg(e_, g, R::in);
    Wide odx(e_, dx, R::out), odg(e_, dgamma, R::out), odb(e_, dbeta, R::out);
    e_.layer_norm_backward(wx, wgm, wg, eps, odx, odg, odb);
    odx.store(), odg.store(), odb.store();
  }
  void batch_norm_stats(const TensorView& x, const TensorView& mean, const TensorView& var) override {
    if (!any_half(x, mean, var) || native_norm(mean)) return e_.batch_norm_stats(x, mean, var);
    Wide wx(e_, x, R::in), om(e_, mean, R::out), ov(e_, var, R::out);
    e_.batch_norm_stats(wx, om, ov);
    om.store(), ov.store();
  }
  void batch_norm(const TensorView& x, const TensorView& mean, const TensorView& var, const TensorView& gamma,
                  const TensorView& beta, double eps, const TensorView& out) override {
    if (!any_half(x, mean, var, gamma, beta, out) || native_norm(gamma, mean, var, beta))
      return e_.batch_norm(x, mean, var, gamma, beta, eps, out);
    Wide wx(e_, x, R::in), wm(e_, mean, R::in), wv(e_, var, R::in), wgm(e_, gamma, R::in), wb(e_, beta, R::in);
    Wide o(e_, out, R::out);
    e_.batch_norm(wx, wm, wv, wgm, wb, eps, o);
    o.store();
  }
  void batch_norm_backward(const TensorView& x, const TensorView& mean, const TensorView& var,
                           const TensorView& gamma, const TensorView& g, double eps, bool training,
                           const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta) override {
    if (!any_half(x, mean, var, gamma, g, dx, dgamma, dbeta) || native_norm(gamma, mean, var, dgamma, dbeta))
      return e_.batch_norm_backward(x, mean, var, gamma, g, eps, training, dx, dgamma, dbeta);
    Wide wx(e_, x, R::in), wm(e_, mean, R::in), wv(e_, var, R::in), wgm(e_, gamma, R::in), wg(e_, g, R::in);
    Wide odx(e_, dx, R::out), odg(e_, dgamma, R::out), odb(e_, dbeta, R::out);
    e_.batch_norm_backward(wx, wm, wv, wgm, wg, eps, training, odx, odg, odb);
    odx.store(), odg.store(), odb.store();
  }
  void lstm_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& c,
                 const TensorView& out) override {
    if (!any_half(input_gates, hidden_gates, c, out)) return e_.lstm_cell(input_gates, hidden_gates, c, out);
    Wide wi(e_, input_gates, R::in), wh(e_, hidden_gates, R::in), wc(e_, c, R::in), o(e_, out, R::out);
    e_.lstm_cell(wi, wh, wc, o);
    o.store();
  }
  void lstm_cell_backward(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& c,
                          const TensorView& g, const TensorView& d_input_gates, const TensorView& d_hidden_gates,
                          const TensorView& dc) override {
    if (!any_half(input_gates, hidden_gates, c, g, d_input_gates, d_hidden_gates, dc))
      return e_.lstm_cell_backward(input_gates, hidden_gates, c, g, d_input_gates, d_hidden_gates, dc);
    Wide wi(e_, input_gates, R::in), wh(e_, hidden_gates, R::in), wc(e_, c, R::in), wg(e_, g, R::in);
    Wide odi(e_, d_input_gates, R::out), odh(e_, d_hidden_gates, R::out), odc(e_, dc, R::out);
    e_.lstm_cell_backward(wi, wh, wc, wg, odi, odh, odc);
    odi.store(), odh.store(), odc.store();
  }

 private:
  // The engine takes a 16-bit x with these float32 statistics and parameters itself.
  template <class... V>
  bool native_norm(const V&... params) const noexcept {
    return e_.batch_norm_16() && ((params.data == nullptr || params.dtype == DataType::float32) && ...);
  }

  Engine& e_;
};

}  // namespace

Engine* widen_half(Engine* inner) {
  if (inner == nullptr) return nullptr;
  return new HalfWideningEngine(inner);  // process lifetime, as the engines it wraps
}

}  // namespace ndgc::ops
