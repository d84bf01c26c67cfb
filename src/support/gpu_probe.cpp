// ndgc::gpu_count() and the device check behind every Device::gpu(i) use.
//
// One atomic pointer to the probe gpu/ registered; a query is an acquire
// load plus the probe's cached count. See gpu_probe.hpp.
#include "support/gpu_probe.hpp"

#include <atomic>

#include <fmt/format.h>

#include "ndgc/error.hpp"

namespace ndgc {
namespace support {
namespace {
std::atomic<const GpuProbe*> g_probe{nullptr};
}

void register_gpu_probe(const GpuProbe* probe) noexcept { g_probe.store(probe, std::memory_order_release); }

bool gpu_engine_linked() noexcept { return g_probe.load(std::memory_order_acquire) != nullptr; }

std::string gpu_unavailable_reason() {
  const GpuProbe* probe = g_probe.load(std::memory_order_acquire);
  return probe ? probe->why_none() : std::string("the CUDA engine is not linked in");
}

void check_device(Device device, const char* op) {
  if (device.is_cpu()) {
    if (device.index == 0) return;
    throw InvalidArgument(fmt::format("{}: {} is not a valid device (the CPU is cpu())", op, device.to_string()));
  }
  const GpuProbe* probe = g_probe.load(std::memory_order_acquire);
  if (!probe)
    throw InvalidArgument(fmt::format(
        "{}: {} is not available: the CUDA engine is not linked into this program (link ndgc::cuda, built when "
        "CMake finds the CUDA toolkit)",
        op, device.to_string()));
  const int n = probe->count();
  if (n == 0)
    throw InvalidArgument(fmt::format("{}: {} is not available: no usable GPU ({})", op, device.to_string(),
                                      probe->why_none()));
  if (device.index < 0 || device.index >= n)
    throw InvalidArgument(fmt::format("{}: {} is not available: index out of range, this machine has {} usable "
                                      "GPU{} (gpu(0) to gpu({}))",
                                      op, device.to_string(), n, n == 1 ? "" : "s", n - 1));
}

}  // namespace support

void check_device(Device device, const std::string& what) { support::check_device(device, what.c_str()); }

int gpu_count() noexcept {
  const support::GpuProbe* probe = support::g_probe.load(std::memory_order_acquire);
  return probe ? probe->count() : 0;
}

}  // namespace ndgc
