// What linking ndgc::cuda does: a static registrar installs the GPU probe
// (support/gpu_probe.hpp); the probe's first query starts CUDA and registers
// the engine and one allocator per device.
//
// Note [Keeping the registrar]
// Nothing in a program calls into this file, so a linker pulling objects out
// of a static archive would drop it, and with --as-needed a shared library
// nobody references is not loaded at all. The ndgc_cuda target therefore
// carries `-Wl,--undefined=ndgc_cuda_registrar_anchor` in its link interface:
// every program that links ndgc::cuda asks for this symbol, which pulls in
// this object and with it the registrar. tests/gpu_link checks it.
#include <memory>
#include <string>

#include "cuda_context.hpp"
#include "cuda_engine.hpp"
#include "ops/engine.hpp"
#include "support/gpu_probe.hpp"

#if __has_include("memory/caching_device_allocator.hpp")
#include "cuda_segment_source.hpp"
#include "memory/caching_device_allocator.hpp"
#define NDGC_CUDA_CACHING 1
#else
#include "cuda_direct_allocator.hpp"
#define NDGC_CUDA_CACHING 0
#endif

extern "C" {
// See Note [Keeping the registrar].
__attribute__((used, visibility("default"))) int ndgc_cuda_registrar_anchor = 1;
}

namespace ndgc::cuda {

void register_devices(int count) {
  for (int i = 0; i < count; ++i) {
    // Allocators live for the process: arrays may be freed during static destruction.
#if NDGC_CUDA_CACHING
    auto* a = new memory::CachingDeviceAllocator(Device::gpu(i), std::make_unique<CudaSegmentSource>(i));
#else
    auto* a = new CudaDirectAllocator(i);
#endif
    memory::register_allocator(Device::gpu(i), a);
  }
  ops::register_engine(DeviceType::gpu, &cuda_engine());
}

namespace {

int probe_count() noexcept { return device_count(); }
std::string probe_why() noexcept { return why_no_device(); }
constexpr support::GpuProbe kProbe{probe_count, probe_why};

struct Registrar {
  Registrar() noexcept { support::register_gpu_probe(&kProbe); }
};
const Registrar g_registrar;

}  // namespace
}  // namespace ndgc::cuda
