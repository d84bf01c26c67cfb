// Engines: the kernels behind every op, one engine per device type.
//
// The ops layer does everything device-independent once (validation,
// broadcasting, output shapes, dtype rules, managers) and hands the engine
// raw tensor views: a data pointer, dtype, shape and strides in elements.
// Broadcast inputs arrive as views with stride 0 on the broadcast axes, so an
// engine never reasons about broadcasting. The CPU engine (ops/cpu/) is built
// in; the CUDA engine (gpu/) registers itself for DeviceType::gpu, and
// nothing in core or the op plumbing changes when it does.
//
// Contract for every kernel: views passed as `out` never overlap an input
// unless they are the identical view (in-place element-wise); the ops layer
// copies first otherwise. Kernels throw only InvalidArgument for bad values
// they alone can see (an out-of-range one_hot index).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "ndgc/device.hpp"
#include "ndgc/dtype.hpp"
#include "ndgc/shape.hpp"
#include "ops/conv_math.hpp"
#include "ops/random_stream.hpp"  // RandomDraw

namespace ndgc::ops {

struct TensorView {
  void* data = nullptr;  // element [0, ..., 0]
  DataType dtype = DataType::float32;
  int rank = 0;
  std::int64_t shape[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};  // in elements; 0 on broadcast axes

  std::int64_t size() const noexcept {
    std::int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= shape[i];
    return n;
  }
  bool is_contiguous() const noexcept {
    std::int64_t expected = 1;
    for (int i = rank - 1; i >= 0; --i) {
      if (shape[i] != 1 && strides[i] != expected) return false;
      expected *= shape[i];
    }
    return true;
  }
  // The same elements with axes reordered: view.permuted(p).shape[i] == shape[p[i]].
  TensorView permuted(const int* perm) const noexcept {
    TensorView v = *this;
    for (int i = 0; i < rank; ++i) {
      v.shape[i] = shape[perm[i]];
      v.strides[i] = strides[perm[i]];
    }
    return v;
  }
  // Elements [start, start + length) of `axis`, the other axes whole (as torch.narrow).
  TensorView narrow(int axis, std::int64_t start, std::int64_t length) const noexcept {
    TensorView v = *this;
    // An empty array may have no buffer: no offset from a null pointer (UB even when nothing is read).
    if (data != nullptr) v.data = static_cast<char*>(data) + start * strides[axis] * std::int64_t(size_of(dtype));
    v.shape[axis] = length;
    return v;
  }
};

// A contiguous view of `count` elements at `data` with `shape`.
TensorView contiguous_view(void* data, DataType dtype, const Shape& shape) noexcept;
// What every engine's embedding kernels throw for an index outside [0, rows):
// InvalidArgument naming the value and its position, "(1, 2)", in `indices`.
[[noreturn]] void throw_embedding_index(const TensorView& indices, std::int64_t flat, std::int64_t value,
                                        std::int64_t rows);

enum class Unary : std::uint8_t {
  neg, abs, exp, log, sqrt, square, relu, sigmoid, tanh,
  // Floating only, added for ONNX (issue 39): round is half to even.
  floor, ceil, round, sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, erf
};
enum class Binary : std::uint8_t { add, sub, mul, div, pow, maximum, minimum, eq, ne, gt, ge, lt, le };
enum class Reduce : std::uint8_t { sum, mean, max, min };

// Adam (Kingma & Ba, with L2 weight decay added to the gradient, as PyTorch's
// Adam): g' = g + wd·w; m = β1·m + (1-β1)·g'; v = β2·v + (1-β2)·g'²;
// w -= m / (sqrt(v) / sqrt(bc2) + ε) · lr / bc1, where bc_i = 1 - β_i^t,
// the square root and the division first (PyTorch's order; see Note [No
// denormal state] in ops/optimizer_math.hpp).
// With `steps` set (a float64 t in the weight's device memory: Note
// [Capturable optimizers] in nn/optimizer.cpp), the kernel computes bc1 and
// bc2 from *steps where it runs, and the two fields are unused.
struct AdamHyper {
  double learning_rate, beta1, beta2, epsilon, weight_decay, bias_correction1, bias_correction2;
  const double* steps = nullptr;
};
// SGD: g' = g + wd·w; with momentum μ: m = μ·m + g', w -= lr·m; without: w -= lr·g'.
struct SgdHyper {
  double learning_rate, momentum, weight_decay;
};

const char* name_of(Unary op) noexcept;
const char* name_of(Binary op) noexcept;
const char* name_of(Reduce op) noexcept;
inline bool is_comparison(Binary op) noexcept { return op >= Binary::eq; }

// Engine calls recorded by a capture, run again by replay() on the same
// views with the same arguments (ndgc/device_graph.hpp).
class CapturedGraph {
 public:
  virtual ~CapturedGraph() = default;
  virtual void replay() = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;

  // The device whose memory `view` is in (the CPU engine's are all host memory).
  virtual Device device_of(const TensorView& /*view*/) const { return Device::cpu(); }

  // Device graphs (Note [Device graphs] in ops/device_graph.cpp). Between
  // begin_capture(d) and end_capture(d) on one thread, that thread's kernels
  // on d are recorded, not run (other threads' run as ever), and to_host /
  // from_host throw InvalidArgument (a replay could not repeat the host's
  // side). begin_capture() returns false for an engine without graphs;
  // end_capture() throws InvalidArgument when the capture failed, and ends
  // it either way.
  virtual bool begin_capture(Device /*device*/) { return false; }
  virtual std::unique_ptr<CapturedGraph> end_capture(Device /*device*/) { return nullptr; }

  virtual void fill(const TensorView& out, double value) = 0;
  // out[i] = start + i * step over a contiguous 1-D out.
  virtual void arange(const TensorView& out, double start, double step) = 0;
  // A 2-D out: ones on the main diagonal, zeros elsewhere.
  virtual void eye(const TensorView& out) = 0;
  // Counter-based: element i of the call draws from stream (seed, offset + i)
  // of random::start_of(draw), so results do not depend on threads or on how
  // the work is split. A draw with a graph_state is only valid while this
  // thread captures on out's device (Note [Draws in a device graph] in
  // ops/random.cpp); one without is refused there (InvalidArgument).
  virtual void random_uniform(const TensorView& out, double low, double high, const RandomDraw& draw) = 0;
  virtual void random_normal(const TensorView& out, double mean, double stddev, const RandomDraw& draw) = 0;
  // Writes a replay's (seed, base) into a device graph's draw state: two
  // uint64 at state.data, on state's device, queued before what follows.
  virtual void set_draw_state(const TensorView& /*state*/, std::uint64_t /*seed*/, std::uint64_t /*base*/) {
    unavailable("set_draw_state");
  }

  // Element-wise copy with dtype conversion; `in` has out's shape (maybe broadcast).
  virtual void copy(const TensorView& in, const TensorView& out) = 0;
  virtual void unary(Unary op, const TensorView& in, const TensorView& out) = 0;
  // a and b have out's shape (maybe broadcast) and the same dtype; comparisons write boolean.
  virtual void binary(Binary op, const TensorView& a, const TensorView& b, const TensorView& out) = 0;
  // out = a op s, or s op a when scalar_left.
  virtual void binary_scalar(Binary op, const TensorView& a, double s, bool scalar_left,
                             const TensorView& out) = 0;
  virtual void where(const TensorView& condition, const TensorView& a, const TensorView& b,
                     const TensorView& out) = 0;
  // ReLU's backward in one pass: out = x > 0 ? g : 0 (all of out's shape and
  // dtype, floating; out may be the identical view of g). Returns false when
  // the engine has no such kernel; autograd then composes it from a
  // comparison and where().
  virtual bool relu_backward(const TensorView& /*x*/, const TensorView& /*g*/, const TensorView& /*out*/) {
    return false;
  }

  // Reduces the axes set in `axes` (bit i: axis i); out has in's rank with
  // those axes of length 1. Not boolean.
  virtual void reduce(Reduce op, const TensorView& in, std::uint32_t axes, const TensorView& out) = 0;
  // Index (int64) of the first max/min along `axis`; out has that axis of length 1.
  virtual void arg_reduce(bool max, const TensorView& in, int axis, const TensorView& out) = 0;

  // a [..., m, k] × b [..., k, n] → out [..., m, n]; the batch axes of a and b
  // are already broadcast to out's.
  virtual void matmul(const TensorView& a, const TensorView& b, const TensorView& out) = 0;
  // out += a × b for 2-D views (autograd accumulating a weight's gradient
  // without a temporary). Returns false when the engine has no such kernel
  // for these views; the caller then multiplies into a temporary and adds.
  virtual bool matmul_add(const TensorView& /*a*/, const TensorView& /*b*/, const TensorView& /*out*/) {
    return false;
  }
  // Whether matmul_add has a kernel for these views: it returns false exactly
  // when this does. For a caller that must prepare `out` before the call
  // (linear copies its bias there), so that it prepares nothing in vain.
  virtual bool has_matmul_add(const TensorView& /*a*/, const TensorView& /*b*/, const TensorView& /*out*/) const {
    return false;
  }
  // A product of 16-bit operands that the engine computes itself with float32
  // sums (AVX512-BF16 on the CPU, tensor cores on a GPU), as matmul's views;
  // the widening engine asks it first and widens when it returns false.
  virtual bool matmul_16(const TensorView& /*a*/, const TensorView& /*b*/, const TensorView& /*out*/) {
    return false;
  }
  virtual void softmax(const TensorView& in, int axis, bool log, const TensorView& out) = 0;
  // Sparse softmax cross-entropy, fused (Note [Fused cross-entropy] in
  // ops/activations.cpp). logits: contiguous [rows, classes], floating;
  // labels: contiguous [rows], one class index per row (any numeric dtype,
  // integral values); loss: a 0-d view of logits' dtype, written with the
  // mean over rows of logsumexp(row) - row[label]. The backward writes
  // grad [rows, classes] = g / rows * (softmax(row) - one_hot(label)), g a
  // 0-d view of the upstream gradient. Both throw InvalidArgument naming
  // the label, its row and the class count for a label outside
  // [0, classes). Return false when the engine has no such kernel; the ops
  // layer then composes log_softmax, one_hot, mul and sum.
  virtual bool sparse_softmax_cross_entropy(const TensorView& /*logits*/, const TensorView& /*labels*/,
                                            const TensorView& /*loss*/) {
    return false;
  }
  virtual bool sparse_softmax_cross_entropy_backward(const TensorView& /*logits*/, const TensorView& /*labels*/,
                                                     const TensorView& /*g*/, const TensorView& /*grad*/) {
    return false;
  }
  // out [..., depth], zero but for out[..., indices[...]] = 1. Throws InvalidArgument
  // for an index outside [0, depth).
  virtual void one_hot(const TensorView& indices, std::int64_t depth, const TensorView& out) = 0;

  // Transfers between the device and host memory (contiguous, dtype converted).
  virtual void to_host(const TensorView& in, const TensorView& host_out) = 0;
  virtual void from_host(const TensorView& host_in, const TensorView& out) = 0;

  // Fused optimizer updates, in place, in one pass over the parameter (see
  // ops/optimizer_update.hpp). All views have the weight's shape and dtype.
  // An engine without a kernel for these views returns false and the ops
  // layer composes the update from the primitives above.
  virtual bool adam_update(const TensorView& /*weight*/, const TensorView& /*grad*/, const TensorView& /*mean*/,
                           const TensorView& /*variance*/, const AdamHyper& /*hyper*/) {
    return false;
  }
  // `momentum.data` is null for plain SGD.
  virtual bool sgd_update(const TensorView& /*weight*/, const TensorView& /*grad*/, const TensorView& /*momentum*/,
                          const SgdHyper& /*hyper*/) {
    return false;
  }

  // Layer kernels (issue 27: ops/conv.cpp, pooling.cpp, normalization.cpp, dropout.cpp,
  // embedding.cpp, lstm_cell.cpp). Float32, float64; out, gradients, norms' x and g: fresh contiguous.
  // An engine that has them says so in has_layer_kernels(), which the ops layer asks
  // before it allocates anything, so an engine without them fails with the op and the
  // device named and nothing left behind; the defaults below throw InvalidArgument
  // naming the kernel, for a caller that did not ask.
  virtual bool has_layer_kernels() const noexcept { return false; }
  // Whether batch_norm_stats, batch_norm and batch_norm_backward take a
  // float16 or bfloat16 x (and g, dx, out) with float32 statistics and
  // parameters themselves; otherwise the widening engine widens those views.
  virtual bool batch_norm_16() const noexcept { return false; }
  // Whether fill, unary, binary, binary_scalar, where, col2im, pool2d,
  // pool2d_backward, gelu, gelu_backward and dropout take float16 and
  // bfloat16 views themselves (every floating view of the call in one 16-bit
  // dtype): computed in float32 and rounded once on store, the widening
  // engine's bits, without its scratch, copies and slices. Otherwise the
  // widening engine widens them (im2col takes them everywhere: it only moves
  // values).
  virtual bool kernels_16() const noexcept { return false; }
  // How many of `images` images conv2d and its gradient put through im2col
  // at a time, each image `bytes` of columns (Note [Convolution as GEMM] in
  // ops/conv.cpp). All of them by default: one im2col and one batched GEMM,
  // the fewest launches; the CPU engine takes what its threads' caches hold.
  virtual std::int64_t im2col_images(std::int64_t images, std::int64_t /*bytes*/) const noexcept { return images; }
  // f(first, count) for each chunk of `chunk` images of `images`, in order
  // (the last one may be shorter): conv2d's and its gradient's one loop.
  template <class F>
  static void for_each_chunk(std::int64_t images, std::int64_t chunk, F&& f) {
    for (std::int64_t first = 0; first < images; first += chunk) f(first, std::min(chunk, images - first));
  }
  // y [N, O, OH, OW] = x [N, C, H, W] convolved by weight [O, C / groups, kH, kW]
  // under w, plus bias [O] where given, by the engine's own convolution where
  // it has one for these views; false, with y untouched, where not: conv2d
  // then goes through im2col and matmul (Note [Convolution as GEMM] in
  // ops/conv.cpp).
  virtual bool conv2d_direct(const TensorView& /*x*/, const TensorView& /*weight*/, const TensorView* /*bias*/,
                             const Window2d& /*w*/, const TensorView& /*y*/) {
    return false;
  }
  // conv2d's gradients by the engine's own convolutions where it has them
  // for these views (the CUDA engine's: cuDNN's); false, with the output
  // untouched, where not: the gradient rule then goes through im2col, the
  // products and col2im. g [N, O, OH, OW], weight and every output are
  // contiguous; x may have any strides. The rule asks only an engine that
  // has_conv2d_gradients(), so no other allocates for them in vain.
  virtual bool has_conv2d_gradients() const noexcept { return false; }
  // dx [N, C, H, W] = the adjoint of the convolution by weight, applied to g.
  virtual bool conv2d_backward_data_direct(const TensorView& /*g*/, const TensorView& /*weight*/,
                                           const Window2d& /*w*/, const TensorView& /*dx*/) {
    return false;
  }
  // dweight [O, C / groups, kH, kW] = the sum over images and output
  // positions of g times the input under each tap.
  virtual bool conv2d_backward_weight_direct(const TensorView& /*x*/, const TensorView& /*g*/,
                                             const Window2d& /*w*/, const TensorView& /*dweight*/) {
    return false;
  }
  // Whether conv2d_direct and the two above take float16 and bfloat16 views
  // themselves (every view of the call in one 16-bit dtype; float32
  // accumulation). Otherwise a 16-bit convolution goes through im2col and
  // the 16-bit products.
  virtual bool conv2d_16() const noexcept { return false; }
  // x [N, C, H, W] (any strides) → col [N, C * kH * kW, OH * OW] (ops/conv_math.hpp).
  virtual void im2col(const TensorView& /*x*/, const Window2d& /*w*/, const TensorView& /*col*/) {
    unavailable("im2col");
  }
  // The adjoint: dx [N, C, H, W] = the sum of col's entries over the pixels they were read from.
  virtual void col2im(const TensorView& /*col*/, const Window2d& /*w*/, const TensorView& /*dx*/) {
    unavailable("col2im");
  }
  // out [N, C, OH, OW]: the window's maximum (padding never wins) or mean over kH·kW (padding counts as 0).
  virtual void pool2d(bool /*max*/, const TensorView& /*x*/, const Window2d& /*w*/, const TensorView& /*out*/) {
    unavailable("pool2d");
  }
  virtual void pool2d_backward(bool /*max*/, const TensorView& /*x*/, const TensorView& /*g*/, const Window2d& /*w*/,
                               const TensorView& /*dx*/) {
    unavailable("pool2d_backward");
  }
  // Exact GELU, x Φ(x), and its backward g (Φ(x) + x φ(x)).
  virtual void gelu(const TensorView& /*x*/, const TensorView& /*out*/) { unavailable("gelu"); }
  virtual void gelu_backward(const TensorView& /*x*/, const TensorView& /*g*/, const TensorView& /*dx*/) {
    unavailable("gelu_backward");
  }
  // out[i] = x[i] / (1 - p) where random::unit(seed, offset + i) >= p, else 0
  // (i in row-major order; seed and offset as random_uniform's). The backward
  // is the same call on the gradient.
  virtual void dropout(const TensorView& /*x*/, double /*p*/, const RandomDraw& /*draw*/,
                       const TensorView& /*out*/) {
    unavailable("dropout");
  }
  // out [n, D] = weight [V, D] rows at indices [n] (any integer dtype).
  // InvalidArgument names the first index outside [0, V), its value and position.
  virtual void embedding(const TensorView& /*indices*/, const TensorView& /*weight*/, const TensorView& /*out*/) {
    unavailable("embedding");
  }
  // dweight [V, D] = the sum of g's rows [n, D] per index, in index order (no atomics).
  virtual void embedding_backward(const TensorView& /*indices*/, const TensorView& /*g*/,
                                  const TensorView& /*dweight*/) {
    unavailable("embedding_backward");
  }
  // embedding and embedding_backward for indices the caller has already
  // checked to lie in [0, V) (the ONNX importer, whose indices are checked
  // on the host). An engine whose check costs a wait may skip it: the CUDA
  // engine's reads a flag back from the device. These defaults check anyway.
  virtual void embedding_in_range(const TensorView& indices, const TensorView& weight, const TensorView& out) {
    embedding(indices, weight, out);
  }
  virtual void embedding_backward_in_range(const TensorView& indices, const TensorView& g,
                                           const TensorView& dweight) {
    embedding_backward(indices, g, dweight);
  }
  // Rows x [R, D]: out = (x - mean) / sqrt(var + eps) * gamma + beta, per row, gamma and beta [D].
  virtual void layer_norm(const TensorView& /*x*/, const TensorView& /*gamma*/, const TensorView& /*beta*/,
                          double /*eps*/, const TensorView& /*out*/) {
    unavailable("layer_norm");
  }
  // Recomputes each row's statistics; a gradient view with null data is not wanted.
  virtual void layer_norm_backward(const TensorView& /*x*/, const TensorView& /*gamma*/, const TensorView& /*g*/,
                                   double /*eps*/, const TensorView& /*dx*/, const TensorView& /*dgamma*/,
                                   const TensorView& /*dbeta*/) {
    unavailable("layer_norm_backward");
  }
  // x [N, C, S] → mean, var [C] (biased), per channel.
  virtual void batch_norm_stats(const TensorView& /*x*/, const TensorView& /*mean*/, const TensorView& /*var*/) {
    unavailable("batch_norm_stats");
  }
  // out [N, C, S] = (x - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c].
  virtual void batch_norm(const TensorView& /*x*/, const TensorView& /*mean*/, const TensorView& /*var*/,
                          const TensorView& /*gamma*/, const TensorView& /*beta*/, double /*eps*/,
                          const TensorView& /*out*/) {
    unavailable("batch_norm");
  }
  // training: mean and var are the batch's (they depend on x); otherwise constants.
  virtual void batch_norm_backward(const TensorView& /*x*/, const TensorView& /*mean*/, const TensorView& /*var*/,
                                   const TensorView& /*gamma*/, const TensorView& /*g*/, double /*eps*/,
                                   bool /*training*/, const TensorView& /*dx*/, const TensorView& /*dgamma*/,
                                   const TensorView& /*dbeta*/) {
    unavailable("batch_norm_backward");
  }
  // The fused LSTM cell (ops/lstm_math.hpp): input_gates, hidden_gates [B, 4H]
  // and c [B, H], each with its last axis contiguous (rows may be strided),
  // → out [2, B, H] = {h', c'}. The backward takes g [2, B, H] = {dh', dc'}
  // and writes the pre-activations' gradient [B, 4H] into d_input_gates and
  // d_hidden_gates (the same values: the gates are their sum) and dc [B, H];
  // a gradient view with null data is not wanted.
  virtual void lstm_cell(const TensorView& /*input_gates*/, const TensorView& /*hidden_gates*/,
                         const TensorView& /*c*/, const TensorView& /*out*/) {
    unavailable("lstm_cell");
  }
  virtual void lstm_cell_backward(const TensorView& /*input_gates*/, const TensorView& /*hidden_gates*/,
                                  const TensorView& /*c*/, const TensorView& /*g*/,
                                  const TensorView& /*d_input_gates*/, const TensorView& /*d_hidden_gates*/,
                                  const TensorView& /*dc*/) {
    unavailable("lstm_cell_backward");
  }

 protected:
  // InvalidArgument: "<kernel>: not available on this engine yet".
  [[noreturn]] static void unavailable(const char* kernel);
};

// The engine for `device`; InvalidArgument for a GPU that cannot be used
// (support::check_device), DeviceMismatch when none is registered.
Engine& engine(Device device);
void register_engine(DeviceType type, Engine* engine) noexcept;

}  // namespace ndgc::ops
