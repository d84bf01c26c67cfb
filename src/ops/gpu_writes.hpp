// The GPU write epoch: a process-wide count of writes to GPU memory, which
// the host mirror compares to know that nothing it copied can have changed
// (Note [Host mirror] in ops/host_read.cpp).
//
// Every engine call on a GPU goes through the engine register_engine wraps
// (WriteCountingEngine, gpu_writes.cpp), which counts each call but to_host
// once it has been issued; code that writes GPU memory outside the engine
// (NCCL's collectives) calls note_gpu_write() after issuing the write.
//
// Thread-safety: both functions from any thread.
#pragma once

#include <cstdint>

namespace ndgc::ops {

class Engine;

// Call after a write to GPU memory has been issued (queued on its stream):
// a host copy taken after this call is ordered after that write.
void note_gpu_write() noexcept;
std::uint64_t gpu_write_epoch() noexcept;

// Advances the epoch when the scope ends: declare it before issuing a write,
// so that the epoch advances after the write returns or throws (a kernel
// that reports a bad value, a collective that fails, may have written part
// of its output).
struct CountsAsGpuWrite {
  CountsAsGpuWrite() = default;
  CountsAsGpuWrite(const CountsAsGpuWrite&) = delete;
  CountsAsGpuWrite& operator=(const CountsAsGpuWrite&) = delete;
  ~CountsAsGpuWrite() { note_gpu_write(); }
};

// `inner` wrapped so that every call but to_host counts as a write; null
// unwraps. Used by register_engine; returns the engine to hand out.
Engine* count_gpu_writes(Engine* inner) noexcept;

}  // namespace ndgc::ops
