// The GPU probe: how the layers above learn whether a GPU engine is linked in
// and which devices it can use, without depending on it (docs/design.md §2).
//
// gpu/ registers a probe from a static registrar when ndgc::cuda is linked;
// without it gpu_count() is 0 and every Device::gpu(i) is refused with
// InvalidArgument saying the engine is not linked. The probe's count is
// called once per query (the CUDA side caches it), so callers may ask on every
// op. Thread-safety: register once at start-up; queries from any thread.
#pragma once

#include <string>

#include "ndgc/device.hpp"

namespace ndgc::support {

struct GpuProbe {
  int (*count)() noexcept;             // usable devices; 0 when none (never throws)
  std::string (*why_none)() noexcept;  // why count() is 0, e.g. "cudaGetDeviceCount: no CUDA-capable device"
};

void register_gpu_probe(const GpuProbe* probe) noexcept;
// True when an engine registered a probe (ndgc::cuda is linked in).
bool gpu_engine_linked() noexcept;
// Why gpu_count() is 0: "the CUDA engine is not linked in" or the probe's reason.
std::string gpu_unavailable_reason();

// Throws InvalidArgument naming `op` and `device` unless the device can hold
// arrays: the CPU, or gpu(i) with an engine linked and i < gpu_count(). The
// message says which: engine not linked, no usable GPU (and why), or index
// out of range.
void check_device(Device device, const char* op);

}  // namespace ndgc::support
