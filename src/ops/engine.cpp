// The engine table: one engine per device type; the CPU engine is built in.
#include "ops/engine.hpp"

#include <iterator>

#include <array>
#include <atomic>
#include <string>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ops/cpu/cpu_engine.hpp"
#include "ops/gpu_writes.hpp"
#include "ops/half_widening.hpp"
#include "support/gpu_probe.hpp"

namespace ndgc::ops {
namespace {
std::atomic<Engine*> g_gpu_engine{nullptr};
}

void Engine::unavailable(const char* kernel) {
  throw InvalidArgument(fmt::format("{}: not available on this engine yet", kernel));
}

Engine& engine(Device device) {
  static Engine& cpu = widened_cpu_engine(cpu::cpu_engine());  // Note [16-bit storage, float32 arithmetic]
  if (device.is_cpu()) return cpu;
  // InvalidArgument naming the device and why (engine not linked, no usable
  // GPU, index out of range); the probe's first query registers the engine.
  support::check_device(device, "engine");
  if (Engine* e = g_gpu_engine.load(std::memory_order_acquire)) return *e;
  throw DeviceMismatch(fmt::format("no engine for {}: the CUDA engine did not register one", device.to_string()));
}

void register_engine(DeviceType type, Engine* e) noexcept {
  // Wrapped so that every write to GPU memory advances the write epoch (ops/gpu_writes.hpp).
  if (type == DeviceType::gpu) g_gpu_engine.store(count_gpu_writes(widened_gpu_engine(e)), std::memory_order_release);
}

TensorView contiguous_view(void* data, DataType dtype, const Shape& shape) noexcept {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.rank = shape.rank();
  std::int64_t stride = 1;
  for (int i = v.rank - 1; i >= 0; --i) {
    v.shape[i] = shape[i];
    v.strides[i] = stride;
    stride *= shape[i];
  }
  return v;
}

void throw_embedding_index(const TensorView& indices, std::int64_t flat, std::int64_t value, std::int64_t rows) {
  std::int64_t idx[kMaxRank] = {};
  for (int i = indices.rank - 1; i >= 0; --i) {
    idx[i] = indices.shape[i] ? flat % indices.shape[i] : 0;
    flat = indices.shape[i] ? flat / indices.shape[i] : 0;
  }
  std::string position = "(";
  for (int i = 0; i < indices.rank; ++i) position += fmt::format("{}{}", i ? ", " : "", idx[i]);
  throw InvalidArgument(fmt::format("embedding: index {} at position {} of the indices is outside [0, {}) (the "
                                    "weight's rows)",
                                    value, position + ")", rows));
}

const char* name_of(Unary op) noexcept {
  constexpr const char* names[] = {"neg",  "abs",  "exp",  "log",  "sqrt",  "square", "relu",  "sigmoid",
                                   "tanh", "floor", "ceil", "round", "sin", "cos",    "tan",   "asin",
                                   "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf"};
  static_assert(std::size(names) == std::size_t(Unary::erf) + 1, "a name for every Unary");
  return names[int(op)];
}

const char* name_of(Binary op) noexcept {
  constexpr const char* names[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum",
                                   "eq",  "ne",  "gt",  "ge",  "lt",  "le"};
  return names[int(op)];
}

const char* name_of(Reduce op) noexcept {
  constexpr const char* names[] = {"sum", "mean", "max", "min"};
  return names[int(op)];
}

}  // namespace ndgc::ops
