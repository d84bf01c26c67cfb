// A simulated GPU for tests: every host-side GPU code path (managers on
// gpu(0), to_device, autograd, training, the debug reports) runs on a machine
// without one, in every CI run.
//
//   test::SimGpu gpu;                              // gpu(0) usable until `gpu` is destroyed
//   NDManager m = NDManager::new_base_manager("g", Device::gpu(0));
//   NDArray x = m.ones({2, 3});                    // device memory: a host-backed caching allocator
//   NDArray h = x.to_device(Device::cpu());        // one to_host
//   CHECK(gpu.to_host_calls() == 1);
//
// What it registers, and takes back when destroyed (in reverse order):
//   - a GPU probe saying gpu(0) is usable (FakeGpuProbe);
//   - for gpu(0), a CachingDeviceAllocator over a HostSegmentSource with a
//     byte budget (FakeGpu, the same policy code the CUDA engine runs over
//     cudaMalloc), so memory::stats / set_limit / empty_cache and the OOM
//     ladder behave as on a device;
//   - an ops::Engine for DeviceType::gpu (SimEngine) that runs every kernel
//     with the CPU engine and counts host↔device transfers, and captures
//     device graphs as the CUDA engine does: the capturing thread's kernels
//     are recorded, not run, host transfers refused, and a replay runs the
//     recording (the CPU engine's CpuEngine::serves_* say which optional
//     kernels a recorded call takes). By default it has no layer kernels, so
//     conv, the pools, the norms and the rest fail naming gpu(0);
//     SimGpu(budget, SimGpu::Kernels::layers) gives it the CUDA engine's set,
//     and engine().set_direct_conv({.on = true}) convolutions of its own, as
//     the CUDA engine has cuDNN's (computed from the definition in float64).
// Without a SimGpu nothing of this is registered and the library behaves as
// it always does on a machine with no GPU.
//
// Note [Simulated residency]
// "Device" memory is host memory here, so a bug that hands a host buffer to
// a GPU kernel (or a device buffer to a host copy) would go unseen: on a real
// GPU it is an illegal address. The segment source records the ranges it
// handed out, and SimEngine checks every view it is given: a device kernel's
// views must lie in those ranges, to_host's destination and from_host's
// source outside them. A violation is counted and thrown as std::logic_error
// (not an ndgc::Error, so no library catch swallows it), naming the kernel.
//
// Declare the SimGpu before any manager on gpu(0), so the managers close
// (and give their blocks back) before the allocator goes.
// Thread-safety: the engine and the residency check may be used from any
// thread (prefetching copies batches on its own thread).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "memory/caching_device_allocator.hpp"
#include "ndgc/error.hpp"
#include "memory/host_segment_source.hpp"
#include "ops/cpu/cpu_engine.hpp"
#include "ops/engine.hpp"
#include "test_util.hpp"

namespace ndgc::test {

// A SegmentSource over a HostSegmentSource that remembers which address
// ranges are "device memory". See Note [Simulated residency].
class TrackedSegmentSource final : public memory::SegmentSource {
 public:
  explicit TrackedSegmentSource(std::unique_ptr<memory::HostSegmentSource> inner) : inner_(std::move(inner)) {}
  memory::HostSegmentSource& inner() noexcept { return *inner_; }

  void* allocate_segment(std::size_t bytes) noexcept override {
    void* p = inner_->allocate_segment(bytes);
    if (p) {
      std::lock_guard lock(mu_);
      segments_[reinterpret_cast<std::uintptr_t>(p)] = bytes;
    }
    return p;
  }
  void free_segment(void* ptr, std::size_t bytes) noexcept override {
    {
      std::lock_guard lock(mu_);
      segments_.erase(reinterpret_cast<std::uintptr_t>(ptr));
    }
    inner_->free_segment(ptr, bytes);
  }
  memory::StreamId current_stream() noexcept override { return inner_->current_stream(); }
  void* record_event(memory::StreamId stream) noexcept override { return inner_->record_event(stream); }
  bool event_done(void* event) noexcept override { return inner_->event_done(event); }
  void destroy_event(void* event) noexcept override { inner_->destroy_event(event); }
  void synchronize() noexcept override { inner_->synchronize(); }
  std::size_t driver_free_bytes() noexcept override { return inner_->driver_free_bytes(); }
  std::size_t driver_total_bytes() noexcept override { return inner_->driver_total_bytes(); }

  // Whether [p, p + bytes) lies in one segment handed out and not yet freed.
  bool holds(const void* p, std::size_t bytes) const {
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    std::lock_guard lock(mu_);
    auto it = segments_.upper_bound(at);
    if (it == segments_.begin()) return false;
    --it;
    return at >= it->first && at + bytes <= it->first + it->second;
  }
  // Whether any byte of [p, p + bytes) lies in a segment.
  bool touches(const void* p, std::size_t bytes) const {
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    std::lock_guard lock(mu_);
    auto it = segments_.upper_bound(at + (bytes ? bytes - 1 : 0));
    if (it == segments_.begin()) return false;
    --it;
    return it->first + it->second > at;
  }

 private:
  std::unique_ptr<memory::HostSegmentSource> inner_;
  mutable std::mutex mu_;
  std::map<std::uintptr_t, std::size_t> segments_;  // start → bytes
};

// A CachingDeviceAllocator for gpu(0) over a HostSegmentSource of `budget`
// bytes (not registered: see SimGpu, or register it yourself).
struct FakeGpu {
  explicit FakeGpu(std::size_t budget)
      : tracked(new TrackedSegmentSource(std::make_unique<memory::HostSegmentSource>(budget))),
        source(&tracked->inner()),
        alloc(Device::gpu(0), std::unique_ptr<memory::SegmentSource>(tracked)) {}
  TrackedSegmentSource* tracked;     // owned by alloc
  memory::HostSegmentSource* source;  // owned by tracked
  memory::CachingDeviceAllocator alloc;
};

// Registers an allocator for gpu(0) for one test; declare it after the
// allocator and before any manager, so arrays close before it unregisters.
struct RegisteredAllocator {
  explicit RegisteredAllocator(memory::DeviceAllocator& a) { memory::register_allocator(Device::gpu(0), &a); }
  ~RegisteredAllocator() { memory::register_allocator(Device::gpu(0), nullptr); }
  RegisteredAllocator(const RegisteredAllocator&) = delete;
  RegisteredAllocator& operator=(const RegisteredAllocator&) = delete;
};

// The GPU engine of a SimGpu: each kernel is the CPU engine's, after the
// residency check (Note [Simulated residency]); transfers are counted.
class SimEngine final : public ops::Engine {
 public:
  SimEngine(const TrackedSegmentSource& device, bool layers) : device_(device), layers_(layers) {}

  std::uint64_t to_host_calls() const noexcept { return to_host_.load(); }
  std::uint64_t from_host_calls() const noexcept { return from_host_.load(); }
  std::uint64_t kernel_calls() const noexcept { return kernels_.load(); }
  std::uint64_t residency_violations() const noexcept { return violations_.load(); }
  // Embedding calls that check their indices on the device: each a wait on the CUDA engine.
  std::uint64_t index_checks() const noexcept { return index_checks_.load(); }
  void reset_counts() noexcept {
    to_host_ = 0, from_host_ = 0, kernels_ = 0, index_checks_ = 0;
  }
  std::uint64_t replays() const noexcept { return replays_.load(); }

  // Device graphs as the CUDA engine has them: the capturing thread's calls
  // are checked and recorded, not run (other threads' run at once), host
  // transfers refused; a replay runs the recorded calls in order, on the
  // same views with the same arguments.
  bool begin_capture(Device device) override {
    std::thread::id none;
    if (!capturer_.compare_exchange_strong(none, std::this_thread::get_id()))
      throw InvalidArgument("SimGpu: a capture is already open on " + device.to_string());
    recorded_.clear();
    return true;
  }
  std::unique_ptr<ops::CapturedGraph> end_capture(Device device) override {
    if (!capturing_here()) throw InvalidArgument("SimGpu: this thread has no capture open on " + device.to_string());
    auto graph = std::make_unique<Graph>(std::move(recorded_), replays_);
    recorded_.clear();
    capturer_.store(std::thread::id());
    return graph;
  }

  void fill(const ops::TensorView& out, double value) override {
    on_device("fill", {&out});
    run([=] { cpu().fill(out, value); });
  }
  void arange(const ops::TensorView& out, double start, double step) override {
    on_device("arange", {&out});
    run([=] { cpu().arange(out, start, step); });
  }
  void eye(const ops::TensorView& out) override {
    on_device("eye", {&out});
    run([=] { cpu().eye(out); });
  }
  // A draw's state is "device" memory read when the recorded call runs, as
  // the CUDA kernels read it (Note [Draws in a device graph]).
  void random_uniform(const ops::TensorView& out, double low, double high, const ops::RandomDraw& draw) override {
    on_device("random_uniform", {&out});
    check_draw("random_uniform", draw);
    run([=] { cpu().random_uniform(out, low, high, draw); });
  }
  void random_normal(const ops::TensorView& out, double mean, double stddev, const ops::RandomDraw& draw) override {
    on_device("random_normal", {&out});
    check_draw("random_normal", draw);
    run([=] { cpu().random_normal(out, mean, stddev, draw); });
  }
  void set_draw_state(const ops::TensorView& state, std::uint64_t seed, std::uint64_t base) override {
    on_device("set_draw_state", {&state});
    refuse_while_capturing("set_draw_state");
    auto* words = static_cast<std::uint64_t*>(state.data);
    words[0] = seed;
    words[1] = base;
  }
  void copy(const ops::TensorView& in, const ops::TensorView& out) override {
    on_device("copy", {&in, &out});
    run([=] { cpu().copy(in, out); });
  }
  void unary(ops::Unary op, const ops::TensorView& in, const ops::TensorView& out) override {
    on_device("unary", {&in, &out});
    run([=] { cpu().unary(op, in, out); });
  }
  void binary(ops::Binary op, const ops::TensorView& a, const ops::TensorView& b,
              const ops::TensorView& out) override {
    on_device("binary", {&a, &b, &out});
    run([=] { cpu().binary(op, a, b, out); });
  }
  void binary_scalar(ops::Binary op, const ops::TensorView& a, double s, bool scalar_left,
                     const ops::TensorView& out) override {
    on_device("binary_scalar", {&a, &out});
    run([=] { cpu().binary_scalar(op, a, s, scalar_left, out); });
  }
  void where(const ops::TensorView& condition, const ops::TensorView& a, const ops::TensorView& b,
             const ops::TensorView& out) override {
    on_device("where", {&condition, &a, &b, &out});
    run([=] { cpu().where(condition, a, b, out); });
  }
  bool relu_backward(const ops::TensorView& x, const ops::TensorView& g, const ops::TensorView& out) override {
    on_device("relu_backward", {&x, &g, &out});
    return run_if(ops::cpu::CpuEngine::serves_relu_backward(x, g, out),
                  [=] { (void)cpu().relu_backward(x, g, out); });
  }
  void reduce(ops::Reduce op, const ops::TensorView& in, std::uint32_t axes, const ops::TensorView& out) override {
    on_device("reduce", {&in, &out});
    run([=] { cpu().reduce(op, in, axes, out); });
  }
  void arg_reduce(bool max, const ops::TensorView& in, int axis, const ops::TensorView& out) override {
    on_device("arg_reduce", {&in, &out});
    run([=] { cpu().arg_reduce(max, in, axis, out); });
  }
  void matmul(const ops::TensorView& a, const ops::TensorView& b, const ops::TensorView& out) override {
    on_device("matmul", {&a, &b, &out});
    run([=] { cpu().matmul(a, b, out); });
  }
  bool matmul_add(const ops::TensorView& a, const ops::TensorView& b, const ops::TensorView& out) override {
    on_device("matmul_add", {&a, &b, &out});
    return run_if(ops::cpu::CpuEngine::serves_matmul_add(a, b, out), [=] { (void)cpu().matmul_add(a, b, out); });
  }
  bool has_matmul_add(const ops::TensorView& a, const ops::TensorView& b, const ops::TensorView& out) const override {
    return ops::cpu::CpuEngine::serves_matmul_add(a, b, out);
  }
  void softmax(const ops::TensorView& in, int axis, bool log, const ops::TensorView& out) override {
    on_device("softmax", {&in, &out});
    run([=] { cpu().softmax(in, axis, log, out); });
  }
  bool sparse_softmax_cross_entropy(const ops::TensorView& logits, const ops::TensorView& labels,
                                    const ops::TensorView& loss) override {
    on_device("sparse_softmax_cross_entropy", {&logits, &labels, &loss});
    return run_if(ops::cpu::CpuEngine::serves_cross_entropy(logits, labels),
                  [=] { (void)cpu().sparse_softmax_cross_entropy(logits, labels, loss); });
  }
  bool sparse_softmax_cross_entropy_backward(const ops::TensorView& logits, const ops::TensorView& labels,
                                             const ops::TensorView& g, const ops::TensorView& grad) override {
    on_device("sparse_softmax_cross_entropy_backward", {&logits, &labels, &g, &grad});
    return run_if(ops::cpu::CpuEngine::serves_cross_entropy_backward(logits, labels, grad),
                  [=] { (void)cpu().sparse_softmax_cross_entropy_backward(logits, labels, g, grad); });
  }
  void one_hot(const ops::TensorView& indices, std::int64_t depth, const ops::TensorView& out) override {
    on_device("one_hot", {&indices, &out});
    run([=] { cpu().one_hot(indices, depth, out); });
  }
  void to_host(const ops::TensorView& in, const ops::TensorView& host_out) override {
    refuse_while_capturing("a copy to the host");
    to_host_.fetch_add(1);
    on_device("to_host", {&in});
    on_host("to_host", host_out);
    cpu().to_host(in, host_out);
  }
  void from_host(const ops::TensorView& host_in, const ops::TensorView& out) override {
    refuse_while_capturing("a copy from the host");
    from_host_.fetch_add(1);
    on_host("from_host", host_in);
    on_device("from_host", {&out});
    cpu().from_host(host_in, out);
  }
  bool adam_update(const ops::TensorView& weight, const ops::TensorView& grad, const ops::TensorView& mean,
                   const ops::TensorView& variance, const ops::AdamHyper& hyper) override {
    const ops::TensorView steps =
        ops::contiguous_view(const_cast<double*>(hyper.steps), DataType::float64, Shape{});  // empty without
    on_device("adam_update", {&weight, &grad, &mean, &variance, &steps});
    return run_if(ops::cpu::CpuEngine::serves_update({&weight, &grad, &mean, &variance}),
                  [=] { (void)cpu().adam_update(weight, grad, mean, variance, hyper); });
  }
  bool sgd_update(const ops::TensorView& weight, const ops::TensorView& grad, const ops::TensorView& momentum,
                  const ops::SgdHyper& hyper) override {
    on_device("sgd_update", {&weight, &grad, &momentum});
    const bool served = momentum.data ? ops::cpu::CpuEngine::serves_update({&weight, &grad, &momentum})
                                      : ops::cpu::CpuEngine::serves_update({&weight, &grad});
    return run_if(served, [=] { (void)cpu().sgd_update(weight, grad, momentum, hyper); });
  }

  // "Device" memory is the tracked segments': the widening engine puts a
  // 16-bit operand's float32 scratch on the device this names.
  Device device_of(const ops::TensorView& v) const override {
    auto [p, bytes] = extent(v);
    return bytes && device_.holds(p, bytes) ? Device::gpu(0) : Device::cpu();
  }

  // Convolutions of the engine's own, as the CUDA engine has them through
  // cuDNN (Engine::conv2d_direct, conv2d_backward_*_direct), off by default:
  // each computed from the definition in float64 (a reference independent of
  // im2col), then stored in the output's dtype. `half`: they take 16-bit
  // views too (Engine::conv2d_16); `accepts` false: each declines its views.
  struct DirectConv {
    bool on = false, half = false, accepts = true;
  };
  void set_direct_conv(DirectConv mode) noexcept { direct_ = mode; }
  // Calls each direct convolution served: forward, gradient of x, of the weight.
  std::uint64_t direct_forward_calls() const noexcept { return direct_calls_[0].load(); }
  std::uint64_t direct_data_calls() const noexcept { return direct_calls_[1].load(); }
  std::uint64_t direct_weight_calls() const noexcept { return direct_calls_[2].load(); }
  bool conv2d_direct(const ops::TensorView& x, const ops::TensorView& weight, const ops::TensorView* bias,
                     const ops::Window2d& w, const ops::TensorView& y) override {
    if (!direct_serves({&x, &weight, &y}) || (bias && bias->dtype != y.dtype)) return false;
    on_device("conv2d_direct", {&x, &weight, &y});
    const ops::TensorView b = bias ? *bias : ops::TensorView{};
    run([=, this] { reference_conv(0, x, weight, bias ? &b : nullptr, w, y); });
    return true;
  }
  bool conv2d_backward_data_direct(const ops::TensorView& g, const ops::TensorView& weight, const ops::Window2d& w,
                                   const ops::TensorView& dx) override {
    if (!direct_serves({&g, &weight, &dx})) return false;
    on_device("conv2d_backward_data_direct", {&g, &weight, &dx});
    run([=, this] { reference_conv(1, dx, weight, nullptr, w, g); });
    return true;
  }
  bool conv2d_backward_weight_direct(const ops::TensorView& x, const ops::TensorView& g, const ops::Window2d& w,
                                     const ops::TensorView& dweight) override {
    if (!direct_serves({&x, &g, &dweight})) return false;
    on_device("conv2d_backward_weight_direct", {&x, &g, &dweight});
    run([=, this] { reference_conv(2, x, dweight, nullptr, w, g); });
    return true;
  }
  bool has_conv2d_gradients() const noexcept override { return direct_.on; }
  bool conv2d_16() const noexcept override { return direct_.on && direct_.half; }

  // The layer kernels, as the CUDA engine has them, when made with them
  // (SimGpu::Kernels::layers); otherwise Engine's, which throw.
  bool has_layer_kernels() const noexcept override { return layers_; }
  void im2col(const ops::TensorView& x, const ops::Window2d& w, const ops::TensorView& col) override {
    layer("im2col", {&x, &col}, [=] { cpu().im2col(x, w, col); });
  }
  void col2im(const ops::TensorView& col, const ops::Window2d& w, const ops::TensorView& dx) override {
    layer("col2im", {&col, &dx}, [=] { cpu().col2im(col, w, dx); });
  }
  void pool2d(bool max, const ops::TensorView& x, const ops::Window2d& w, const ops::TensorView& out) override {
    layer("pool2d", {&x, &out}, [=] { cpu().pool2d(max, x, w, out); });
  }
  void pool2d_backward(bool max, const ops::TensorView& x, const ops::TensorView& g, const ops::Window2d& w,
                       const ops::TensorView& dx) override {
    layer("pool2d_backward", {&x, &g, &dx}, [=] { cpu().pool2d_backward(max, x, g, w, dx); });
  }
  void gelu(const ops::TensorView& x, const ops::TensorView& out) override {
    layer("gelu", {&x, &out}, [=] { cpu().gelu(x, out); });
  }
  void gelu_backward(const ops::TensorView& x, const ops::TensorView& g, const ops::TensorView& dx) override {
    layer("gelu_backward", {&x, &g, &dx}, [=] { cpu().gelu_backward(x, g, dx); });
  }
  void dropout(const ops::TensorView& x, double p, const ops::RandomDraw& draw, const ops::TensorView& out) override {
    if (layers_) check_draw("dropout", draw);
    layer("dropout", {&x, &out}, [=] { cpu().dropout(x, p, draw, out); });
  }
  // The CUDA engine's embedding checks its indices and reads the verdict
  // back, a wait (counted, as it does, outside a capture); the *_in_range
  // twins do not. Here all four check, so a caller that claims its indices
  // are in range and is wrong fails loudly.
  void embedding(const ops::TensorView& indices, const ops::TensorView& weight, const ops::TensorView& out) override {
    layer("embedding", {&indices, &weight, &out}, [=] { cpu().embedding(indices, weight, out); });
    count_index_check();
  }
  void embedding_backward(const ops::TensorView& indices, const ops::TensorView& g,
                          const ops::TensorView& dweight) override {
    layer("embedding_backward", {&indices, &g, &dweight}, [=] { cpu().embedding_backward(indices, g, dweight); });
    count_index_check();
  }
  void embedding_in_range(const ops::TensorView& indices, const ops::TensorView& weight,
                          const ops::TensorView& out) override {
    layer("embedding", {&indices, &weight, &out}, [=] { cpu().embedding(indices, weight, out); });
  }
  void embedding_backward_in_range(const ops::TensorView& indices, const ops::TensorView& g,
                                   const ops::TensorView& dweight) override {
    layer("embedding_backward", {&indices, &g, &dweight}, [=] { cpu().embedding_backward(indices, g, dweight); });
  }
  void layer_norm(const ops::TensorView& x, const ops::TensorView& gamma, const ops::TensorView& beta, double eps,
                  const ops::TensorView& out) override {
    layer("layer_norm", {&x, &gamma, &beta, &out}, [=] { cpu().layer_norm(x, gamma, beta, eps, out); });
  }
  void layer_norm_backward(const ops::TensorView& x, const ops::TensorView& gamma, const ops::TensorView& g,
                           double eps, const ops::TensorView& dx, const ops::TensorView& dgamma,
                           const ops::TensorView& dbeta) override {
    layer("layer_norm_backward", {&x, &gamma, &g, &dx, &dgamma, &dbeta},
          [=] { cpu().layer_norm_backward(x, gamma, g, eps, dx, dgamma, dbeta); });
  }
  void batch_norm_stats(const ops::TensorView& x, const ops::TensorView& mean, const ops::TensorView& var) override {
    layer("batch_norm_stats", {&x, &mean, &var}, [=] { cpu().batch_norm_stats(x, mean, var); });
  }
  void batch_norm(const ops::TensorView& x, const ops::TensorView& mean, const ops::TensorView& var,
                  const ops::TensorView& gamma, const ops::TensorView& beta, double eps,
                  const ops::TensorView& out) override {
    layer("batch_norm", {&x, &mean, &var, &gamma, &beta, &out},
          [=] { cpu().batch_norm(x, mean, var, gamma, beta, eps, out); });
  }
  void batch_norm_backward(const ops::TensorView& x, const ops::TensorView& mean, const ops::TensorView& var,
                           const ops::TensorView& gamma, const ops::TensorView& g, double eps, bool training,
                           const ops::TensorView& dx, const ops::TensorView& dgamma,
                           const ops::TensorView& dbeta) override {
    layer("batch_norm_backward", {&x, &mean, &var, &gamma, &g, &dx, &dgamma, &dbeta},
          [=] { cpu().batch_norm_backward(x, mean, var, gamma, g, eps, training, dx, dgamma, dbeta); });
  }
  void lstm_cell(const ops::TensorView& input_gates, const ops::TensorView& hidden_gates, const ops::TensorView& c,
                 const ops::TensorView& out) override {
    layer("lstm_cell", {&input_gates, &hidden_gates, &c, &out},
          [=] { cpu().lstm_cell(input_gates, hidden_gates, c, out); });
  }
  void lstm_cell_backward(const ops::TensorView& input_gates, const ops::TensorView& hidden_gates,
                          const ops::TensorView& c, const ops::TensorView& g, const ops::TensorView& d_input_gates,
                          const ops::TensorView& d_hidden_gates, const ops::TensorView& dc) override {
    layer("lstm_cell_backward", {&input_gates, &hidden_gates, &c, &g, &d_input_gates, &d_hidden_gates, &dc},
          [=] { cpu().lstm_cell_backward(input_gates, hidden_gates, c, g, d_input_gates, d_hidden_gates, dc); });
  }

 private:
  static ops::Engine& cpu() noexcept { return ops::cpu::cpu_engine(); }

  // The bytes from the lowest to the highest element `v` addresses; 0 for
  // an empty view (its pointer is never read).
  static std::pair<const char*, std::size_t> extent(const ops::TensorView& v) {
    if (v.data == nullptr || v.size() == 0) return {nullptr, 0};
    std::int64_t low = 0, high = 0;
    for (int i = 0; i < v.rank; ++i) {
      const std::int64_t span = (v.shape[i] - 1) * v.strides[i];
      (span < 0 ? low : high) += span;
    }
    const std::size_t elem = size_of(v.dtype);
    const char* first = static_cast<const char*>(v.data) + low * std::int64_t(elem);
    return {first, std::size_t(high - low) * elem + elem};
  }

  void on_device(const char* kernel, std::initializer_list<const ops::TensorView*> views) {
    kernels_.fetch_add(1);
    for (const ops::TensorView* v : views) {
      auto [p, bytes] = extent(*v);
      if (bytes && !device_.holds(p, bytes)) violation(kernel, "a view that is not in gpu(0)'s memory");
    }
  }
  void on_host(const char* kernel, const ops::TensorView& v) {
    auto [p, bytes] = extent(v);
    if (bytes && device_.touches(p, bytes)) violation(kernel, "a host view that lies in gpu(0)'s memory");
  }
  [[noreturn]] void violation(const char* kernel, const char* what) {
    violations_.fetch_add(1);
    throw std::logic_error(std::string("SimGpu: the GPU engine's ") + kernel + " was given " + what +
                           " (a real GPU would fault here)");
  }

  class Graph final : public ops::CapturedGraph {
   public:
    Graph(std::vector<std::function<void()>> calls, std::atomic<std::uint64_t>& replays)
        : calls_(std::move(calls)), replays_(replays) {}
    void replay() override {
      for (const auto& call : calls_) call();
      replays_.fetch_add(1);
    }

   private:
    std::vector<std::function<void()>> calls_;
    std::atomic<std::uint64_t>& replays_;
  };

  bool capturing_here() const noexcept { return capturer_.load() == std::this_thread::get_id(); }
  // Whether the direct convolutions take these views (one dtype, float32
  // or float64, or 16-bit when `half`).
  bool direct_serves(std::initializer_list<const ops::TensorView*> views) const noexcept {
    const DataType t = (*views.begin())->dtype;
    const bool dtype_ok = t == DataType::float32 || t == DataType::float64 ||
                          (direct_.half && (t == DataType::float16 || t == DataType::bfloat16));
    bool same = true;
    for (const ops::TensorView* v : views) same = same && v->dtype == t;
    return direct_.on && direct_.accepts && layers_ && dtype_ok && same;
  }
  // The views in float64, contiguous (any strides and dtype in).
  static std::vector<double> wide(const ops::TensorView& v) {
    std::vector<double> out(std::size_t(v.size()));
    Shape shape;
    for (int i = 0; i < v.rank; ++i) shape.push_back(v.shape[i]);
    cpu().copy(v, ops::contiguous_view(out.data(), DataType::float64, shape));
    return out;
  }
  // pass 0: y = conv(x, w) (+ bias); 1: x = the gradient of x from g = y and
  // w; 2: w = the gradient of the weight from x and g = y. Sums in float64,
  // stored once in the output's dtype.
  void reference_conv(int pass, const ops::TensorView& x, const ops::TensorView& wt, const ops::TensorView* bias,
                      const ops::Window2d& w, const ops::TensorView& y) {
    direct_calls_[std::size_t(pass)].fetch_add(1);
    const std::vector<double> xv = pass == 1 ? std::vector<double>(std::size_t(x.size())) : wide(x);
    const std::vector<double> wv = pass == 2 ? std::vector<double>(std::size_t(wt.size())) : wide(wt);
    const std::vector<double> yv = pass == 0 ? std::vector<double>(std::size_t(y.size())) : wide(y);
    std::vector<double> out(pass == 0 ? yv.size() : pass == 1 ? xv.size() : wv.size());
    const std::int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], wd = x.shape[3];
    const std::int64_t o = wt.shape[0], cg = wt.shape[1], kh = wt.shape[2], kw = wt.shape[3];
    const std::int64_t oh = y.shape[2], ow = y.shape[3], og = o / w.groups;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t oc = 0; oc < o; ++oc)
        for (std::int64_t oy = 0; oy < oh; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            const std::int64_t yi = ((i * o + oc) * oh + oy) * ow + ox;
            for (std::int64_t ci = 0; ci < cg; ++ci)
              for (std::int64_t ky = 0; ky < kh; ++ky)
                for (std::int64_t kx = 0; kx < kw; ++kx) {
                  const std::int64_t iy = oy * w.stride[0] - w.padding[0] + ky * w.dilation[0];
                  const std::int64_t ix = ox * w.stride[1] - w.padding[1] + kx * w.dilation[1];
                  if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                  const std::int64_t xi = ((i * c + oc / og * cg + ci) * h + iy) * wd + ix;
                  const std::int64_t wi = ((oc * cg + ci) * kh + ky) * kw + kx;
                  if (pass == 0) out[std::size_t(yi)] += xv[std::size_t(xi)] * wv[std::size_t(wi)];
                  else if (pass == 1) out[std::size_t(xi)] += yv[std::size_t(yi)] * wv[std::size_t(wi)];
                  else out[std::size_t(wi)] += yv[std::size_t(yi)] * xv[std::size_t(xi)];
                }
          }
    if (bias) {
      const std::vector<double> b = wide(*bias);
      for (std::size_t k = 0; k < out.size(); ++k) out[k] += b[k / std::size_t(oh * ow) % std::size_t(o)];
    }
    const ops::TensorView& target = pass == 0 ? y : pass == 1 ? x : wt;
    Shape shape;
    for (int i = 0; i < target.rank; ++i) shape.push_back(target.shape[i]);
    cpu().copy(ops::contiguous_view(out.data(), DataType::float64, shape), target);
  }
  void count_index_check() noexcept {
    if (!capturing_here()) index_checks_.fetch_add(1);
  }
  // A layer kernel: Engine's (which throws "not available") without them;
  // otherwise checked, then run or recorded.
  template <class F>
  void layer(const char* kernel, std::initializer_list<const ops::TensorView*> views, F&& f) {
    if (!layers_) unavailable(kernel);
    on_device(kernel, views);
    run(std::forward<F>(f));
  }
  // A kernel: run now, or recorded while this thread captures.
  template <class F>
  void run(F&& kernel) {
    if (capturing_here()) recorded_.emplace_back(std::forward<F>(kernel));
    else kernel();
  }
  template <class F>
  bool run_if(bool served, F&& kernel) {
    if (served) run(std::forward<F>(kernel));
    return served;
  }
  void refuse_while_capturing(const char* what) const {
    if (capturing_here())
      throw InvalidArgument(std::string("SimGpu: ") + what + " while this thread captures a device graph");
  }
  // As the CUDA engine's check_draw: a graph's draw only in a capture, any other outside.
  void check_draw(const char* what, const ops::RandomDraw& draw) const {
    if (draw.graph_state == nullptr) return refuse_while_capturing(what);
    if (!capturing_here())
      throw InvalidArgument(std::string("SimGpu: ") + what + " of a draw reserved in a capture, outside it");
  }

  const TrackedSegmentSource& device_;
  const bool layers_;
  DirectConv direct_;
  std::array<std::atomic<std::uint64_t>, 3> direct_calls_{};
  std::atomic<std::uint64_t> to_host_{0}, from_host_{0}, kernels_{0}, violations_{0}, replays_{0}, index_checks_{0};
  std::atomic<std::thread::id> capturer_{};
  std::vector<std::function<void()>> recorded_;  // the capturer's alone
};

// gpu(0), simulated: probe, caching allocator and engine, registered for the
// object's lifetime. See the top of this file.
class SimGpu {
 public:
  static constexpr std::size_t kDefaultBudget = std::size_t(1) << 30;  // "device" capacity (host memory on demand)

  // core: a GPU engine without the layer kernels (conv, pools, norms, GELU,
  // dropout, embedding, the LSTM cell), whose ops then fail naming the
  // device; layers: with them, as the CUDA engine has them.
  enum class Kernels { core, layers };

  explicit SimGpu(std::size_t budget = kDefaultBudget, Kernels kernels = Kernels::core)
      : gpu_(budget), engine_(*gpu_.tracked, kernels == Kernels::layers) {
    memory::register_allocator(Device::gpu(0), &gpu_.alloc);
    memory::set_limit(Device::gpu(0), 0);  // whatever NDGC_GPU_MAX_BYTES says: the budget is the bound
    ops::register_engine(DeviceType::gpu, &engine_);
  }
  ~SimGpu() {
    gc::poll();  // orphans of gpu(0) close while its allocator is still there
    ops::register_engine(DeviceType::gpu, nullptr);
    memory::register_allocator(Device::gpu(0), nullptr);
  }
  SimGpu(const SimGpu&) = delete;
  SimGpu& operator=(const SimGpu&) = delete;

  SimEngine& engine() noexcept { return engine_; }
  memory::CachingDeviceAllocator& allocator() noexcept { return gpu_.alloc; }
  memory::HostSegmentSource& source() noexcept { return *gpu_.source; }
  std::uint64_t to_host_calls() const noexcept { return engine_.to_host_calls(); }
  std::uint64_t from_host_calls() const noexcept { return engine_.from_host_calls(); }
  std::uint64_t index_checks() const noexcept { return engine_.index_checks(); }
  void reset_counts() noexcept { engine_.reset_counts(); }
  // Bytes handed out on gpu(0) now (memory::stats(gpu(0)).current_bytes).
  std::uint64_t bytes_in_use() const noexcept { return gpu_.alloc.stats().current_bytes; }

 private:
  FakeGpuProbe probe_{1};  // first: registered before, unregistered after the rest
  FakeGpu gpu_;
  SimEngine engine_;
};

}  // namespace ndgc::test
