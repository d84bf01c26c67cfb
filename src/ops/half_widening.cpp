// The widening engine. See Note [16-bit storage, float32 arithmetic] in
// ops/half_widening.hpp.
#include "ops/half_widening.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>

#include "memory/allocator.hpp"

namespace ndgc::ops {
namespace {

bool half(const TensorView& v) noexcept { return v.data != nullptr && is_half(v.dtype); }

template <class... V>
bool any_half(const V&... views) noexcept {
  return (half(views) || ...);
}

// Every floating view of one 16-bit dtype (booleans, a condition or a
// comparison's result, aside): what Engine::kernels_16 takes.
template <class... V>
bool one_half_dtype(const TensorView& first, const V&... rest) noexcept {
  [[maybe_unused]] auto fits = [&](const TensorView& v) { return v.dtype == DataType::boolean || v.dtype == first.dtype; };
  return is_half(first.dtype) && (fits(rest) && ...);
}

enum class Role { in, out };

// One operand of a call as float32: the view itself when it is not 16-bit,
// otherwise a float32 scratch buffer on the view's device, filled from the
// view for an input. store() narrows an output back; it is explicit so that
// a kernel that throws leaves its output as it was. An input broadcast along
// an axis (stride 0: a bias over a batch of images) is widened once along it
// and seen broadcast again, not copied out to the whole shape.
class Wide {
 public:
  Wide(Engine& inner, const TensorView& v, Role role) : inner_(inner), original_(v), view_(v) {
    if (!half(v)) return;
    device_ = inner.device_of(v);
    TensorView compact = v;  // v without its broadcast axes' repeats
    for (int i = 0; i < v.rank; ++i)
      if (role == Role::in && v.strides[i] == 0) compact.shape[i] = 1;
    view_ = compact;
    view_.dtype = DataType::float32;
    bytes_ = std::size_t(compact.size()) * sizeof(float);
    view_.data = memory::allocator(device_).allocate(bytes_);
    std::int64_t stride = 1;
    for (int i = v.rank - 1; i >= 0; --i) {
      view_.strides[i] = stride;
      stride *= compact.shape[i];
    }
    if (role == Role::in) inner.copy(compact, view_);
    for (int i = 0; i < v.rank; ++i)
      if (compact.shape[i] != v.shape[i]) view_.shape[i] = v.shape[i], view_.strides[i] = 0;
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
// the scratch stays at most 64 KiB an operand (and in the L2 cache) whatever
// the operand's size. The float32 kernel computes each element as it would
// have whole, so the bits are the same. 2^14 elements rather than 2^16: a
// binary op widens three operands, and at 2^16 their 768 KiB was the bf16
// LSTM step's peak (an LSTM weight gradient's accumulation); 2^14 lowered the
// peak from 0.62x to 0.56x of float32's, and the bf16 steps ran no slower
// (perf/RESULTS.md, issue 43).
constexpr std::int64_t kSliceElements = std::int64_t(1) << 14;

// f(start, length) over slices of `axis` of `shape_of`, each at most
// kSliceElements elements (one index at least); one call, f(0, extent), when
// the axis is -1 or absent (extent 1) or not longer than 1.
template <class F>
void by_slices(const TensorView& shape_of, F&& f, int axis = 0) {
  const std::int64_t extent = axis < 0 || axis >= shape_of.rank ? 1 : shape_of.shape[axis];
  if (extent <= 1) return f(std::int64_t(0), extent);
  const std::int64_t per = std::max<std::int64_t>(shape_of.size() / extent, 1);
  const std::int64_t step = std::max<std::int64_t>(1, kSliceElements / per);
  for (std::int64_t start = 0; start < extent; start += step) f(start, std::min(step, extent - start));
}

// The longest axis of `in` that `axes` (bit i: axis i) does not reduce, or
// -1 when every axis of length above 1 is reduced or `in` is empty.
int widest_kept_axis(const TensorView& in, std::uint32_t axes) {
  int best = -1;
  if (in.size() == 0) return best;
  for (int a = 0; a < in.rank; ++a)
    if (!(axes & (1u << a)) && in.shape[a] > 1 && (best < 0 || in.shape[a] > in.shape[best])) best = a;
  return best;
}

// `v` narrowed to [start, start + length) of axis 0, when it has that axis.
TensorView slice(const TensorView& v, std::int64_t start, std::int64_t length) {
  return v.rank == 0 ? v : v.narrow(0, start, length);
}

// A batched product whose operands all carry the output's leading batch axis
// (no broadcast along it): it can run in slices of that axis.
bool batched_alike(const TensorView& a, const TensorView& b, const TensorView& out) {
  return out.rank >= 3 && a.rank == out.rank && b.rank == out.rank && a.shape[0] == out.shape[0] &&
         b.shape[0] == out.shape[0];
}

// Of three views alike along axis 0, the one with the most elements an item: slices sized by it keep
// every operand's slice within kSliceElements (unless one item alone is larger).
const TensorView& widest_item(const TensorView& a, const TensorView& b, const TensorView& out) {
  const TensorView* widest = &a;
  for (const TensorView* v : {&b, &out})
    if (v->size() > widest->size()) widest = v;
  return *widest;
}

class HalfWideningEngine final : public Engine {
 public:
  explicit HalfWideningEngine(Engine* inner) noexcept : inner_(inner) {}
  void set_inner(Engine* inner) noexcept { inner_.store(inner, std::memory_order_release); }

  Device device_of(const TensorView& v) const override { return e().device_of(v); }
  bool begin_capture(Device device) override { return e().begin_capture(device); }
  std::unique_ptr<CapturedGraph> end_capture(Device device) override { return e().end_capture(device); }
  bool has_layer_kernels() const noexcept override { return e().has_layer_kernels(); }
  bool batch_norm_16() const noexcept override { return e().batch_norm_16(); }
  bool kernels_16() const noexcept override { return e().kernels_16(); }
  std::int64_t im2col_images(std::int64_t images, std::int64_t bytes) const noexcept override {
    return e().im2col_images(images, bytes);
  }

  // ---- factories: a float32 result, rounded ----------------------------------
  void fill(const TensorView& out, double value) override {
    if (!half(out) || native(out)) return e().fill(out, value);
    by_slices(out, [&](std::int64_t at, std::int64_t n) {  // Note [Widening in slices]: a backward pass's zeros
      Wide o(e(), slice(out, at, n), R::out);
      e().fill(o, value);
      o.store();
    });
  }
  void arange(const TensorView& out, double start, double step) override {
    if (!half(out)) return e().arange(out, start, step);
    Wide o(e(), out, R::out);
    e().arange(o, start, step);
    o.store();
  }
  void eye(const TensorView& out) override {
    if (!half(out)) return e().eye(out);
    Wide o(e(), out, R::out);
    e().eye(o);
    o.store();
  }
  void random_uniform(const TensorView& out, double low, double high, const RandomDraw& draw) override {
    if (!half(out)) return e().random_uniform(out, low, high, draw);
    Wide o(e(), out, R::out);
    e().random_uniform(o, low, high, draw);
    o.store();
  }
  void random_normal(const TensorView& out, double mean, double stddev, const RandomDraw& draw) override {
    if (!half(out)) return e().random_normal(out, mean, stddev, draw);
    Wide o(e(), out, R::out);
    e().random_normal(o, mean, stddev, draw);
    o.store();
  }
  void set_draw_state(const TensorView& state, std::uint64_t seed, std::uint64_t base) override {
    e().set_draw_state(state, seed, base);
  }

  // ---- the engine converts these itself ----------------------------------------
  void copy(const TensorView& in, const TensorView& out) override { e().copy(in, out); }
  void to_host(const TensorView& in, const TensorView& host_out) override { e().to_host(in, host_out); }
  void from_host(const TensorView& host_in, const TensorView& out) override { e().from_host(host_in, out); }

  // ---- element-wise ------------------------------------------------------------
  void unary(Unary op, const TensorView& in, const TensorView& out) override {
    if (!any_half(in, out) || native(in, out)) return e().unary(op, in, out);
    by_slices(out, [&](std::int64_t at, std::int64_t n) {  // Note [Widening in slices]
      Wide x(e(), slice(in, at, n), R::in), o(e(), slice(out, at, n), R::out);
      e().unary(op, x, o);
      o.store();
    });
  }
  void binary(Binary op, const TensorView& a, const TensorView& b, const TensorView& out) override {
    if (!any_half(a, b, out) || native(a, b, out)) return e().binary(op, a, b, out);
    by_slices(out, [&](std::int64_t at, std::int64_t n) {
      Wide x(e(), slice(a, at, n), R::in), y(e(), slice(b, at, n), R::in), o(e(), slice(out, at, n), R::out);
      e().binary(op, x, y, o);
      o.store();
    });
  }
  void binary_scalar(Binary op, const TensorView& a, double s, bool scalar_left, const TensorView& out) override {
    if (!any_half(a, out) || native(a, out)) return e().binary_scalar(op, a, s, scalar_left, out);
    by_slices(out, [&](std::int64_t at, std::int64_t n) {
      Wide x(e(), slice(a, at, n), R::in), o(e(), slice(out, at, n), R::out);
      e().binary_scalar(op, x, s, scalar_left, o);
      o.store();
    });
  }
  void where(const TensorView& condition, const TensorView& a, const TensorView& b, const TensorView& out) override {
    if (!any_half(a, b, out) || native(a, b, out)) return e().where(condition, a, b, out);
    by_slices(out, [&](std::int64_t at, std::int64_t n) {
      Wide x(e(), slice(a, at, n), R::in), y(e(), slice(b, at, n), R::in), o(e(), slice(out, at, n), R::out);
      e().where(slice(condition, at, n), x, y, o);
      o.store();
    });
  }
  bool relu_backward(const TensorView& x, const TensorView& g, const TensorView& out) override {
    if (!any_half(x, g, out)) return e().relu_backward(x, g, out);
    bool served = true;
    by_slices(out, [&](std::int64_t at, std::int64_t n) {
      if (!served) return;
      Wide wx(e(), slice(x, at, n), R::in), wg(e(), slice(g, at, n), R::in), o(e(), slice(out, at, n), R::out);
      served = e().relu_backward(wx, wg, o);
      if (served) o.store();
    });
    return served;
  }

  // ---- reductions, products, softmax ---------------------------------------------
  void reduce(Reduce op, const TensorView& in, std::uint32_t axes, const TensorView& out) override {
    if (!any_half(in, out)) return e().reduce(op, in, axes, out);
    // Note [Widening in slices], along the widest axis that is not reduced:
    // each output element reads only its own slice (a gradient's sum over
    // the batch widens a few hundred KiB at a time, not the whole gradient).
    const int kept = widest_kept_axis(in, axes);
    const auto part = [&](const TensorView& v, std::int64_t at, std::int64_t n) {
      return kept < 0 ? v : v.narrow(kept, at, n);
    };
    by_slices(in, [&](std::int64_t at, std::int64_t n) {
      Wide x(e(), part(in, at, n), R::in), o(e(), part(out, at, n), R::out);
      e().reduce(op, x, axes, o);
      o.store();
    }, kept);
  }
  void arg_reduce(bool max, const TensorView& in, int axis, const TensorView& out) override {
    if (!half(in)) return e().arg_reduce(max, in, axis, out);
    Wide x(e(), in, R::in);
    e().arg_reduce(max, x, axis, out);
  }
  void matmul(const TensorView& a, const TensorView& b, const TensorView& out) override {
    if (!any_half(a, b, out)) return e().matmul(a, b, out);
    if (e().matmul_16(a, b, out)) return;
    if (batched_alike(a, b, out)) {
      // Note [Widening in slices]: each item of a batched product is a product of its own, so a slice of
      // items gets the bits it gets in the whole (a convolution's gradients are such products, per image).
      by_slices(widest_item(a, b, out), [&](std::int64_t at, std::int64_t n) {
        Wide x(e(), slice(a, at, n), R::in), y(e(), slice(b, at, n), R::in), o(e(), slice(out, at, n), R::out);
        e().matmul(x, y, o);
        o.store();
      });
      return;
    }
    Wide x(e(), a, R::in), y(e(), b, R::in), o(e(), out, R::out);
    e().matmul(x, y, o);
    o.store();
  }
  bool matmul_add(const TensorView& a, const TensorView& b, const TensorView& out) override {
    return !any_half(a, b, out) && e().matmul_add(a, b, out);
  }
  bool has_matmul_add(const TensorView& a, const TensorView& b, const TensorView& out) const override {
    return !any_half(a, b, out) && e().has_matmul_add(a, b, out);
  }
  void softmax(const TensorView& in, int axis, bool log, const TensorView& out) override {
    if (!any_half(in, out)) return e().softmax(in, axis, log, out);
    Wide x(e(), in, R::in), o(e(), out, R::out);  // whole: the kernel's row blocking depends on the row count
    e().softmax(x, axis, log, o);
    o.store();
  }
  bool sparse_softmax_cross_entropy(const TensorView& logits, const TensorView& labels,
                                    const TensorView& loss) override {
    if (!any_half(logits, labels, loss)) return e().sparse_softmax_cross_entropy(logits, labels, loss);
    Wide x(e(), logits, R::in), y(e(), labels, R::in), o(e(), loss, R::out);
    if (!e().sparse_softmax_cross_entropy(x, y, o)) return false;
    o.store();
    return true;
  }
  bool sparse_softmax_cross_entropy_backward(const TensorView& logits, const TensorView& labels,
                                             const TensorView& g, const TensorView& grad) override {
    if (!any_half(logits, labels, g, grad)) return e().sparse_softmax_cross_entropy_backward(logits, labels, g, grad);
    Wide x(e(), logits, R::in), y(e(), labels, R::in), wg(e(), g, R::in), o(e(), grad, R::out);
    if (!e().sparse_softmax_cross_entropy_backward(x, y, wg, o)) return false;
    o.store();
    return true;
  }
  void one_hot(const TensorView& indices, std::int64_t depth, const TensorView& out) override {
    if (!any_half(indices, out)) return e().one_hot(indices, depth, out);
    Wide i(e(), indices, R::in), o(e(), out, R::out);
    e().one_hot(i, depth, o);
    o.store();
  }

  // Read-and-write operands: each slice is widened, updated by the fused
  // float32 kernel and stored back, so every step computes in float32 and
  // rounds the weight and the state once. (Composing the update from 16-bit
  // primitives would round after each: Adam's v = β2·(v - g²) + g² loses all
  // of (1 - β2)·g² in bfloat16, and the step divides by ε.)
  bool adam_update(const TensorView& weight, const TensorView& grad, const TensorView& mean,
                   const TensorView& variance, const AdamHyper& hyper) override {
    if (!any_half(weight, grad, mean, variance)) return e().adam_update(weight, grad, mean, variance, hyper);
    bool served = true;
    by_slices(weight, [&](std::int64_t at, std::int64_t n) {
      if (!served) return;
      Wide w(e(), slice(weight, at, n), R::in), g(e(), slice(grad, at, n), R::in);
      Wide m(e(), slice(mean, at, n), R::in), v(e(), slice(variance, at, n), R::in);
      served = e().adam_update(w, g, m, v, hyper);
      if (served) w.store(), m.store(), v.store();
    });
    return served;
  }
  bool sgd_update(const TensorView& weight, const TensorView& grad, const TensorView& momentum,
                  const SgdHyper& hyper) override {
    if (!any_half(weight, grad, momentum)) return e().sgd_update(weight, grad, momentum, hyper);
    bool served = true;
    by_slices(weight, [&](std::int64_t at, std::int64_t n) {
      if (!served) return;
      Wide w(e(), slice(weight, at, n), R::in), g(e(), slice(grad, at, n), R::in);
      Wide m(e(), momentum.data ? slice(momentum, at, n) : momentum, R::in);
      served = e().sgd_update(w, g, m, hyper);
      if (served) w.store(), m.store();
    });
    return served;
  }

  // ---- layers --------------------------------------------------------------------
  bool conv2d_direct(const TensorView& x, const TensorView& weight, const TensorView* bias, const Window2d& w,
                     const TensorView& y) override {
    // 16-bit convolutions go through im2col and the 16-bit products, unless
    // the engine convolves 16-bit views itself (Engine::conv2d_16).
    const bool plain = !any_half(x, weight, y) && !(bias && any_half(*bias));
    return (plain || native_conv(x, weight, y, bias)) && e().conv2d_direct(x, weight, bias, w, y);
  }
  bool conv2d_backward_data_direct(const TensorView& g, const TensorView& weight, const Window2d& w,
                                   const TensorView& dx) override {
    const bool plain = !any_half(g, weight, dx);
    return (plain || native_conv(g, weight, dx)) && e().conv2d_backward_data_direct(g, weight, w, dx);
  }
  bool conv2d_backward_weight_direct(const TensorView& x, const TensorView& g, const Window2d& w,
                                     const TensorView& dweight) override {
    const bool plain = !any_half(x, g, dweight);
    return (plain || native_conv(x, g, dweight)) && e().conv2d_backward_weight_direct(x, g, w, dweight);
  }
  bool conv2d_16() const noexcept override { return e().conv2d_16(); }
  bool has_conv2d_gradients() const noexcept override { return e().has_conv2d_gradients(); }
  void im2col(const TensorView& x, const Window2d& w, const TensorView& col) override {
    // Values only move: every engine's im2col takes 16-bit views as they are.
    if (!any_half(x, col) || (x.dtype == col.dtype && half(x) && half(col))) return e().im2col(x, w, col);
    Wide wx(e(), x, R::in), o(e(), col, R::out);
    e().im2col(wx, w, o);
    o.store();
  }
  void col2im(const TensorView& col, const Window2d& w, const TensorView& dx) override {
    if (!any_half(col, dx) || native(col, dx)) return e().col2im(col, w, dx);
    by_slices(dx, [&](std::int64_t at, std::int64_t n) {  // image by image: col's axis 0 is dx's
      Wide c(e(), slice(col, at, n), R::in), o(e(), slice(dx, at, n), R::out);
      e().col2im(c, w, o);
      o.store();
    });
  }
  void pool2d(bool max, const TensorView& x, const Window2d& w, const TensorView& out) override {
    if (!any_half(x, out) || native(x, out)) return e().pool2d(max, x, w, out);
    by_slices(x, [&](std::int64_t at, std::int64_t n) {  // image by image
      Wide wx(e(), slice(x, at, n), R::in), o(e(), slice(out, at, n), R::out);
      e().pool2d(max, wx, w, o);
      o.store();
    });
  }
  void pool2d_backward(bool max, const TensorView& x, const TensorView& g, const Window2d& w,
                       const TensorView& dx) override {
    if (!any_half(x, g, dx) || native(x, g, dx)) return e().pool2d_backward(max, x, g, w, dx);
    by_slices(x, [&](std::int64_t at, std::int64_t n) {
      Wide wx(e(), slice(x, at, n), R::in), wg(e(), slice(g, at, n), R::in), o(e(), slice(dx, at, n), R::out);
      e().pool2d_backward(max, wx, wg, w, o);
      o.store();
    });
  }
  void gelu(const TensorView& x, const TensorView& out) override {
    if (!any_half(x, out) || native(x, out)) return e().gelu(x, out);
    by_slices(out, [&](std::int64_t at, std::int64_t n) {
      Wide wx(e(), slice(x, at, n), R::in), o(e(), slice(out, at, n), R::out);
      e().gelu(wx, o);
      o.store();
    });
  }
  void gelu_backward(const TensorView& x, const TensorView& g, const TensorView& dx) override {
    if (!any_half(x, g, dx) || native(x, g, dx)) return e().gelu_backward(x, g, dx);
    by_slices(dx, [&](std::int64_t at, std::int64_t n) {
      Wide wx(e(), slice(x, at, n), R::in), wg(e(), slice(g, at, n), R::in), o(e(), slice(dx, at, n), R::out);
      e().gelu_backward(wx, wg, o);
      o.store();
    });
  }
  void dropout(const TensorView& x, double p, const RandomDraw& draw, const TensorView& out) override {
    if (!any_half(x, out) || native(x, out)) return e().dropout(x, p, draw, out);
    const std::int64_t per_row = out.rank && out.shape[0] ? out.size() / out.shape[0] : 0;
    by_slices(out, [&](std::int64_t at, std::int64_t n) {  // element i draws (seed, offset + i), i row-major
      Wide wx(e(), slice(x, at, n), R::in), o(e(), slice(out, at, n), R::out);
      RandomDraw part = draw;
      part.offset += std::uint64_t(at * per_row);
      e().dropout(wx, p, part, o);
      o.store();
    });
  }
  void embedding(const TensorView& indices, const TensorView& weight, const TensorView& out) override {
    by_indices(&Engine::embedding, indices, weight, out);
  }
  void embedding_backward(const TensorView& indices, const TensorView& g, const TensorView& dweight) override {
    by_indices(&Engine::embedding_backward, indices, g, dweight);
  }
  void embedding_in_range(const TensorView& indices, const TensorView& weight, const TensorView& out) override {
    by_indices(&Engine::embedding_in_range, indices, weight, out);
  }
  void embedding_backward_in_range(const TensorView& indices, const TensorView& g,
                                   const TensorView& dweight) override {
    by_indices(&Engine::embedding_backward_in_range, indices, g, dweight);
  }
  void layer_norm(const TensorView& x, const TensorView& gamma, const TensorView& beta, double eps,
                  const TensorView& out) override {
    if (!any_half(x, gamma, beta, out)) return e().layer_norm(x, gamma, beta, eps, out);
    Wide wx(e(), x, R::in), wgm(e(), gamma, R::in), wb(e(), beta, R::in), o(e(), out, R::out);
    e().layer_norm(wx, wgm, wb, eps, o);
    o.store();
  }
  void layer_norm_backward(const TensorView& x, const TensorView& gamma, const TensorView& g, double eps,
                           const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta) override {
    if (!any_half(x, gamma, g, dx, dgamma, dbeta)) return e().layer_norm_backward(x, gamma, g, eps, dx, dgamma, dbeta);
    Wide wx(e(), x, R::in), wgm(e(), gamma, R::in), wg(e(), g, R::in);
    Wide odx(e(), dx, R::out), odg(e(), dgamma, R::out), odb(e(), dbeta, R::out);
    e().layer_norm_backward(wx, wgm, wg, eps, odx, odg, odb);
    odx.store(), odg.store(), odb.store();
  }
  void batch_norm_stats(const TensorView& x, const TensorView& mean, const TensorView& var) override {
    if (!any_half(x, mean, var) || native_norm(mean)) return e().batch_norm_stats(x, mean, var);
    Wide wx(e(), x, R::in), om(e(), mean, R::out), ov(e(), var, R::out);
    e().batch_norm_stats(wx, om, ov);
    om.store(), ov.store();
  }
  void batch_norm(const TensorView& x, const TensorView& mean, const TensorView& var, const TensorView& gamma,
                  const TensorView& beta, double eps, const TensorView& out) override {
    if (!any_half(x, mean, var, gamma, beta, out) || native_norm(gamma, mean, var, beta))
      return e().batch_norm(x, mean, var, gamma, beta, eps, out);
    Wide wx(e(), x, R::in), wm(e(), mean, R::in), wv(e(), var, R::in), wgm(e(), gamma, R::in), wb(e(), beta, R::in);
    Wide o(e(), out, R::out);
    e().batch_norm(wx, wm, wv, wgm, wb, eps, o);
    o.store();
  }
  void batch_norm_backward(const TensorView& x, const TensorView& mean, const TensorView& var,
                           const TensorView& gamma, const TensorView& g, double eps, bool training,
                           const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta) override {
    if (!any_half(x, mean, var, gamma, g, dx, dgamma, dbeta) || native_norm(gamma, mean, var, dgamma, dbeta))
      return e().batch_norm_backward(x, mean, var, gamma, g, eps, training, dx, dgamma, dbeta);
    Wide wx(e(), x, R::in), wm(e(), mean, R::in), wv(e(), var, R::in), wgm(e(), gamma, R::in), wg(e(), g, R::in);
    Wide odx(e(), dx, R::out), odg(e(), dgamma, R::out), odb(e(), dbeta, R::out);
    e().batch_norm_backward(wx, wm, wv, wgm, wg, eps, training, odx, odg, odb);
    odx.store(), odg.store(), odb.store();
  }
  void lstm_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& c,
                 const TensorView& out) override {
    if (!any_half(input_gates, hidden_gates, c, out)) return e().lstm_cell(input_gates, hidden_gates, c, out);
    Wide wi(e(), input_gates, R::in), wh(e(), hidden_gates, R::in), wc(e(), c, R::in), o(e(), out, R::out);
    e().lstm_cell(wi, wh, wc, o);
    o.store();
  }
  void lstm_cell_backward(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& c,
                          const TensorView& g, const TensorView& d_input_gates, const TensorView& d_hidden_gates,
                          const TensorView& dc) override {
    if (!any_half(input_gates, hidden_gates, c, g, d_input_gates, d_hidden_gates, dc))
      return e().lstm_cell_backward(input_gates, hidden_gates, c, g, d_input_gates, d_hidden_gates, dc);
    Wide wi(e(), input_gates, R::in), wh(e(), hidden_gates, R::in), wc(e(), c, R::in), wg(e(), g, R::in);
    Wide odi(e(), d_input_gates, R::out), odh(e(), d_hidden_gates, R::out), odc(e(), dc, R::out);
    e().lstm_cell_backward(wi, wh, wc, wg, odi, odh, odc);
    odi.store(), odh.store(), odc.store();
  }

 private:
  // The engine takes a 16-bit x with these float32 statistics and parameters itself.
  template <class... V>
  bool native_norm(const V&... params) const noexcept {
    return e().batch_norm_16() && ((params.data == nullptr || params.dtype == DataType::float32) && ...);
  }

  // The engine convolves these 16-bit views itself (Engine::conv2d_16);
  // a bias, where given, of their dtype too.
  bool native_conv(const TensorView& a, const TensorView& b, const TensorView& c,
                   const TensorView* bias = nullptr) const noexcept {
    return e().conv2d_16() && one_half_dtype(a, b, c) && (!bias || bias->dtype == a.dtype);
  }

  // The engine takes these 16-bit views itself (Engine::kernels_16).
  template <class... V>
  bool native(const V&... views) const noexcept {
    return e().kernels_16() && one_half_dtype(views...);
  }

  // An embedding kernel, forward or backward: the indices as they are, the
  // 16-bit table or gradient (`in`) and result (`out`) widened.
  using ByIndices = void (Engine::*)(const TensorView&, const TensorView&, const TensorView&);
  void by_indices(ByIndices kernel, const TensorView& indices, const TensorView& in, const TensorView& out) {
    if (!any_half(in, out)) return (e().*kernel)(indices, in, out);
    Wide wi(e(), in, R::in), o(e(), out, R::out);
    (e().*kernel)(indices, wi, o);
    o.store();
  }

  Engine& e() const noexcept { return *inner_.load(std::memory_order_relaxed); }

  std::atomic<Engine*> inner_;  // swapped when a GPU engine registers again (tests' simulated GPU)
};

}  // namespace

Engine& widened_cpu_engine(Engine& cpu) {
  static HalfWideningEngine wrapper(&cpu);
  return wrapper;
}

Engine* widened_gpu_engine(Engine* inner) noexcept {
  if (inner == nullptr) return nullptr;
  static HalfWideningEngine wrapper(inner);  // one for the process: registering again swaps what it wraps
  wrapper.set_inner(inner);
  return &wrapper;
}

}  // namespace ndgc::ops
