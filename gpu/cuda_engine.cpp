// The CUDA engine object: device selection, validation the kernels report,
// host transfers and the dispatch into the kernel launchers (kernels.hpp).
//
// Transfers go through the calling thread's pinned staging buffer: to_host
// copies the device bytes into it, synchronises the device's stream (only
// that stream, which wrote the array) and converts on the host into the
// caller's buffer; from_host converts into the staging buffer and queues an
// asynchronous copy, so the caller's buffer is free again at once and the
// next from_host on the thread waits only for that copy (an event).
#include "cuda_engine.hpp"

#include <memory>
#include <type_traits>

#include <fmt/format.h>

#include "cuda_check.hpp"
#include "cuda_context.hpp"
#include "engine_support.hpp"
#include "kernels.hpp"
#include "ndgc/error.hpp"
#include "ops/cpu/cpu_engine.hpp"
#include "support/assert.hpp"

namespace ndgc::cuda {

using ops::TensorView;

namespace {

bool fusable(std::initializer_list<const TensorView*> views) {
  const DataType t = (*views.begin())->dtype;
  if (!is_floating(t)) return false;
  for (const TensorView* v : views)
    if (v->dtype != t || !v->is_contiguous()) return false;
  return true;
}

// A captured graph, instantiated; replays queue on the device's stream.
class CudaGraph final : public ops::CapturedGraph {
 public:
  CudaGraph(int device, cudaGraphExec_t exec) : device_(device), exec_(exec) {}
  ~CudaGraph() override { cudaGraphExecDestroy(exec_); }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  void replay() override {
    select(device_);
    CUDA_CHECK(cudaGraphLaunch(exec_, stream(device_)));
  }

 private:
  int device_;
  cudaGraphExec_t exec_;
};

}  // namespace

Device CudaEngine::device_of(const ops::TensorView& view) const { return Device::gpu(cuda::device_of(view.data)); }

bool CudaEngine::begin_capture(Device device) {
  begin_stream_capture(device.index);
  return true;
}

std::unique_ptr<ops::CapturedGraph> CudaEngine::end_capture(Device device) {
  return std::make_unique<CudaGraph>(device.index, end_stream_capture(device.index));
}

CudaEngine& cuda_engine() noexcept {
  static CudaEngine engine;
  return engine;
}

void CudaEngine::fill(const TensorView& out, double value) {
  if (out.size() == 0) return;
  On on(out);
  kernels::fill(out, value, on.stream);
}

void CudaEngine::arange(const TensorView& out, double start, double step) {
  if (out.size() == 0) return;
  On on(out);
  kernels::arange(out, start, step, on.stream);
}

void CudaEngine::eye(const TensorView& out) {
  if (out.size() == 0) return;
  On on(out);
  kernels::eye(out, on.stream);
}

void CudaEngine::random_uniform(const TensorView& out, double low, double high, const ops::RandomDraw& draw) {
  if (out.size() == 0) return;
  On on(out);
  check_draw(on.device, "random_uniform", draw);
  kernels::random_uniform(out, low, high, draw, on.stream);
}

void CudaEngine::random_normal(const TensorView& out, double mean, double stddev, const ops::RandomDraw& draw) {
  if (out.size() == 0) return;
  On on(out);
  check_draw(on.device, "random_normal", draw);
  kernels::random_normal(out, mean, stddev, draw, on.stream);
}

void CudaEngine::set_draw_state(const TensorView& state, std::uint64_t seed, std::uint64_t base) {
  NDGC_ASSERT(state.size() == 2 && size_of(state.dtype) == 8, "set_draw_state: the state is two 64-bit words");
  On on(state);
  refuse_while_capturing(on.device, "set_draw_state", kHostSideInCapture);
  kernels::set_draw_state(static_cast<std::uint64_t*>(state.data), seed, base, on.stream);
}

void CudaEngine::copy(const TensorView& in, const TensorView& out) {
  if (out.size() == 0) return;
  On on(out);
  kernels::copy(in, out, on.stream);
}

void CudaEngine::unary(ops::Unary op, const TensorView& in, const TensorView& out) {
  if (in.dtype == DataType::boolean)
    throw DTypeMismatch(fmt::format("{}: boolean arrays have no {}", ops::name_of(op), ops::name_of(op)));
  if (out.size() == 0) return;
  On on(out);
  kernels::unary(op, in, out, on.stream);
}

namespace {
// Integer division is the one binary op that can fail on values: see Note in cuda_context.hpp (error slots).
void checked_binary(ops::Binary op, const TensorView& a, const TensorView& b, const TensorView& out, double s,
                    int side) {
  if (out.size() == 0) return;
  On on(out);
  const bool validates = op == ops::Binary::div && !is_floating(a.dtype) && a.dtype != DataType::boolean;
  std::int64_t* err = validates ? reset_error_slot(on.device) : nullptr;
  kernels::binary(op, a, b, out, s, side, err, on.stream);
  std::int64_t value = 0;
  if (validates && read_error_slot(on.device, value)) throw InvalidArgument("div: integer division by zero");
}
}  // namespace

void CudaEngine::binary(ops::Binary op, const TensorView& a, const TensorView& b, const TensorView& out) {
  checked_binary(op, a, b, out, 0.0, 0);
}

void CudaEngine::binary_scalar(ops::Binary op, const TensorView& a, double s, bool scalar_left,
                               const TensorView& out) {
  // Integer division by a zero scalar fails on every element; so does the CPU.
  checked_binary(op, a, a, out, s, scalar_left ? 1 : 2);
}

void CudaEngine::where(const TensorView& condition, const TensorView& a, const TensorView& b,
                       const TensorView& out) {
  if (out.size() == 0) return;
  On on(out);
  kernels::where(condition, a, b, out, on.stream);
}

void CudaEngine::reduce(ops::Reduce op, const TensorView& in, std::uint32_t axes, const TensorView& out) {
  if (out.size() == 0) return;
  On on(out);
  kernels::reduce(op, in, axes, out, on.device, on.stream);
}

void CudaEngine::arg_reduce(bool max, const TensorView& in, int axis, const TensorView& out) {
  if (out.size() == 0) return;
  On on(out);
  kernels::arg_reduce(max, in, axis, out, on.device, on.stream);
}

void CudaEngine::matmul(const TensorView& a, const TensorView& b, const TensorView& out) {
  if (out.size() == 0) return;
  On on(out);
  if (kernels::matmul(a, b, out, false, on.device, on.stream)) return;
  // An output layout cuBLAS cannot write: multiply into a contiguous scratch, then copy.
  DeviceScratch scratch(on.device, std::size_t(out.size()) * size_of(out.dtype));
  const TensorView tmp = contiguous_like(out, scratch.get(), out.dtype);
  kernels::matmul(a, b, tmp, false, on.device, on.stream);
  kernels::copy(tmp, out, on.stream);
}

// cuBLAS's GemmEx with 16-bit operands and float32 sums (tensor cores).
bool CudaEngine::matmul_16(const TensorView& a, const TensorView& b, const TensorView& out) {
  if (!is_half(out.dtype) || a.dtype != out.dtype || b.dtype != out.dtype) return false;
  On on(out);
  return kernels::matmul(a, b, out, false, on.device, on.stream);
}

bool CudaEngine::has_matmul_add(const TensorView& a, const TensorView& b, const TensorView& out) const {
  return out.rank == 2 && a.rank == 2 && b.rank == 2 && is_floating(out.dtype);
}

bool CudaEngine::matmul_add(const TensorView& a, const TensorView& b, const TensorView& out) {
  if (!has_matmul_add(a, b, out)) return false;
  if (out.size() == 0) return true;
  On on(out);
  return kernels::matmul(a, b, out, true, on.device, on.stream);
}

void CudaEngine::softmax(const TensorView& in, int axis, bool log, const TensorView& out) {
  if (out.size() == 0) return;
  On on(out);
  kernels::softmax(in, axis, log, out, on.stream);
}

void CudaEngine::one_hot(const TensorView& indices, std::int64_t depth, const TensorView& out) {
  if (out.size() == 0) return;
  On on(out);
  kernels::fill(out, 0.0, on.stream);
  std::int64_t* err = reset_error_slot(on.device);
  kernels::one_hot(indices, depth, out, err, on.stream);
  std::int64_t bad = 0;
  if (read_error_slot(on.device, bad))
    throw InvalidArgument(fmt::format("one_hot: index {} is outside [0, {})", bad, depth));
}

void CudaEngine::to_host(const TensorView& in, const TensorView& host_out) {
  const std::int64_t n = in.size();
  if (n == 0) return;
  On on(in);
  refuse_while_capturing(on.device, "a copy to the host", kHostSideInCapture);
  const std::size_t bytes = std::size_t(n) * size_of(in.dtype);
  std::unique_ptr<DeviceScratch> packed;
  const void* source = in.data;
  if (!in.is_contiguous()) {  // gather on the device first: one transfer of exactly n elements
    packed = std::make_unique<DeviceScratch>(on.device, bytes);
    kernels::copy(in, contiguous_like(in, packed->get(), in.dtype), on.stream);
    source = packed->get();
  }
  void* stage = staging(on.device, bytes);
  CUDA_CHECK(cudaMemcpyAsync(stage, source, bytes, cudaMemcpyDeviceToHost, on.stream));
  CUDA_CHECK(cudaStreamSynchronize(on.stream));  // the stream that wrote `in`, and only it
  ops::cpu::cpu_engine().copy(contiguous_like(host_out, stage, in.dtype), host_out);
}

void CudaEngine::from_host(const TensorView& host_in, const TensorView& out) {
  const std::int64_t n = out.size();
  if (n == 0) return;
  On on(out);
  refuse_while_capturing(on.device, "a copy from the host", kHostSideInCapture);
  const std::size_t bytes = std::size_t(n) * size_of(out.dtype);
  void* stage = staging(on.device, bytes);  // waits for this thread's previous copy out of it
  ops::cpu::cpu_engine().copy(host_in, contiguous_like(out, stage, out.dtype));
  if (out.is_contiguous()) {
    CUDA_CHECK(cudaMemcpyAsync(out.data, stage, bytes, cudaMemcpyHostToDevice, on.stream));
  } else {
    DeviceScratch packed(on.device, bytes);
    CUDA_CHECK(cudaMemcpyAsync(packed.get(), stage, bytes, cudaMemcpyHostToDevice, on.stream));
    kernels::copy(contiguous_like(out, packed.get(), out.dtype), out, on.stream);
  }
  staging_used(on.device);
}

bool CudaEngine::adam_update(const TensorView& weight, const TensorView& grad, const TensorView& mean,
                             const TensorView& variance, const ops::AdamHyper& hyper) {
  if (!fusable({&weight, &grad, &mean, &variance})) return false;
  if (weight.size() == 0) return true;
  On on(weight);
  kernels::adam(weight, grad, mean, variance, hyper, on.stream);
  return true;
}

bool CudaEngine::sgd_update(const TensorView& weight, const TensorView& grad, const TensorView& momentum,
                            const ops::SgdHyper& hyper) {
  if (!fusable({&weight, &grad}) || (momentum.data && !fusable({&weight, &momentum}))) return false;
  if (weight.size() == 0) return true;
  On on(weight);
  kernels::sgd(weight, grad, momentum, hyper, on.stream);
  return true;
}

}  // namespace ndgc::cuda
