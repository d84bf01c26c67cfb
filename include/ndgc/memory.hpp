// Memory accounting and limits, per device (docs/design.md §6).
//
//   memory::Stats s = memory::stats(Device::cpu());
//   s.current_bytes;  s.peak_bytes;  s.allocated_bytes;  s.freed_bytes;
//   memory::set_limit(Device::cpu(), 64 << 20);   // 0: no limit
//   memory::reset_peak(Device::cpu());
//   memory::Stats g = memory::stats(Device::gpu(0));  // + reserved_bytes, cached_bytes, segments, ...
//   memory::empty_cache(Device::gpu(0));              // cached segments back to the driver
//
// Every native buffer goes through one allocator per device, which counts it.
// Over a limit (or when the device itself is full), the allocator first
// drains the auto-close reclaim queue (collecting under the trace detector),
// gives cached memory back and retries; only then does it throw OutOfMemory
// (requested bytes, limit or capacity, bytes in use and reserved, the largest
// managers and what to try). Limits count bytes in use (current_bytes), not
// memory a cache keeps. Limits also come from
// NDGC_MAX_BYTES, NDGC_GPU_MAX_BYTES and NDGC_MAX_PHYSICAL_BYTES (process
// resident size) with k/m/g/t suffixes. All functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "ndgc/device.hpp"

namespace ndgc::memory {

struct Stats {
  std::uint64_t current_bytes = 0;    // in use now
  std::uint64_t peak_bytes = 0;       // high-water mark since start or reset_peak
  std::uint64_t allocated_bytes = 0;  // total ever allocated
  std::uint64_t freed_bytes = 0;      // total ever freed
  std::uint64_t allocations = 0;      // number of allocations
  std::uint64_t frees = 0;            // number of frees
  std::uint64_t limit_bytes = 0;      // 0: unlimited
  std::uint64_t cached_bytes = 0;     // kept for reuse, not in use: the host's block caches, or on a
                                      // GPU reserved_bytes minus the blocks handed out
  std::uint64_t reserved_bytes = 0;   // held from the system: in use plus cached (GPU: in driver segments)
  std::uint64_t segments = 0;         // GPU: driver allocations held; host: large blocks mapped
  // The caching device allocator's only (0 on the host): see docs/gpu-memory.md.
  std::uint64_t peak_reserved_bytes = 0;  // high-water mark of reserved_bytes
  std::uint64_t active_blocks = 0;        // blocks handed out or awaiting other streams
  // Every device:
  std::uint64_t alloc_retries = 0;  // allocations retried after freeing memory (the OOM ladder)
  std::uint64_t oom_count = 0;      // OutOfMemory thrown (or a device allocation refused for good)
  // Workspaces on this device (ndgc/workspace.hpp), every thread's: their
  // arenas are part of current_bytes; spilled bytes were ordinary memory.
  std::uint64_t workspace_capacity_bytes = 0;  // arena bytes held
  std::uint64_t workspace_used_bytes = 0;      // arena bytes holding arrays not yet recycled
  std::uint64_t workspace_spilled_bytes = 0;   // total ever spilled to ordinary memory
  // On a GPU: host memory holding copies of its arrays that reads on the
  // host reuse until a GPU write (the host mirror, docs/gpu.md). Not part of
  // current_bytes or of any limit; freed with the arrays' storage.
  std::uint64_t host_mirror_bytes = 0;
};

// Each function throws DeviceMismatch for a device no engine registered an
// allocator for (a GPU without the CUDA engine), InvalidArgument for an
// invalid device.
Stats stats(Device device);
void reset_peak(Device device);
// Bytes allowed in use on `device` at once; 0 removes the limit.
void set_limit(Device device, std::uint64_t bytes);
std::uint64_t limit(Device device);
// Gives memory a device's allocator keeps for reuse back to the system: on a
// GPU, every fully free cached segment (after waiting for pending frees); on
// the CPU, every cached large block and the calling thread's small ones.
void empty_cache(Device device);
// Resident-set limit for the whole process; 0 removes it. Checked on host
// allocations (at most once per MiB allocated), so it is approximate.
void set_physical_limit(std::uint64_t bytes);
std::uint64_t physical_limit();
// The process's resident set size in bytes, as the kernel reports it.
std::uint64_t resident_bytes();

// "64m" → 67108864; accepts k, m, g, t (powers of 1024), case-insensitive.
// Throws InvalidArgument naming `what` for anything else.
std::uint64_t parse_size(const std::string& text, const std::string& what = "size");
// 67108864 → "64.0 MiB".
std::string format_bytes(std::uint64_t bytes);

}  // namespace ndgc::memory
