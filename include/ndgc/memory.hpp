// Memory accounting and limits, per device (DESIGN.md §6).
//
//   memory::Stats s = memory::stats(Device::cpu());
//   s.current_bytes;  s.peak_bytes;  s.allocated_bytes;  s.freed_bytes;
//   memory::set_limit(Device::cpu(), 64 << 20);   // 0: no limit
//   memory::reset_peak(Device::cpu());
//
// Every native buffer goes through one allocator per device, which counts it.
// Over a limit, the allocator first drains the auto-close reclaim queue and
// retries; only then does it throw OutOfMemory (requested bytes, limit, bytes
// in use, the largest managers and what to try). Limits also come from
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
  std::uint64_t cached_bytes = 0;     // freed blocks kept for reuse (not in use; host only)
};

Stats stats(Device device);
void reset_peak(Device device);
// Bytes allowed in use on `device` at once; 0 removes the limit.
void set_limit(Device device, std::uint64_t bytes);
std::uint64_t limit(Device device);
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
