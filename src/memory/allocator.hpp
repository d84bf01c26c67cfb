// Device allocators: the one door every native buffer goes through (docs/design.md §6).
//
// A DeviceAllocator wraps a raw backend (host heap, CUDA caching allocator)
// with accounting (current / peak / allocated / freed bytes and counts, all
// relaxed atomics: a consistent snapshot is not promised, exact totals are)
// and a limit. Over the limit, or when the backend says no, allocate() runs
// the OOM ladder (Note [OOM ladder] in allocator.cpp): the pressure handler
// that a lower layer installed (core drains the reclaim queue; the trace
// detector also collects), the backend's empty_cache(), one retry, then
// OutOfMemory with the backend's state and the report the lower layer
// provides (largest managers).
//
// Thread-safety: allocate/deallocate/stats from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "ndgc/device.hpp"
#include "ndgc/memory.hpp"

namespace ndgc::memory {

// The largest request any allocator serves: PTRDIFF_MAX, as malloc's. Above
// it, and above all near SIZE_MAX where size arithmetic would wrap to a small
// number, a request is OutOfMemory before any accounting runs.
inline constexpr std::size_t kMaxAllocationBytes = std::size_t(std::numeric_limits<std::ptrdiff_t>::max());

class DeviceAllocator {
 public:
  explicit DeviceAllocator(Device device) : device_(device) {}
  virtual ~DeviceAllocator() = default;
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // `bytes` may be 0 (returns nullptr). Throws OutOfMemory.
  void* allocate(std::size_t bytes);
  void deallocate(void* ptr, std::size_t bytes) noexcept;
  // Bytes this allocator did not provide but must count (a memory-mapped
  // workspace arena): the same accounting, limits and OutOfMemory path.
  void charge(std::size_t bytes);
  void uncharge(std::size_t bytes) noexcept;

  Device device() const noexcept { return device_; }
  Stats stats() const noexcept;
  void reset_peak() noexcept;
  std::size_t counter(int which) const noexcept;
  void set_limit(std::uint64_t bytes) noexcept { limit_.store(bytes, std::memory_order_relaxed); }
  std::uint64_t limit() const noexcept { return limit_.load(std::memory_order_relaxed); }
  // Gives memory the backend keeps for reuse back to the system (a rung of
  // the OOM ladder, and memory::empty_cache). Default: nothing is kept.
  virtual void empty_cache() noexcept {}
  // Device graphs (ops/device_graph.cpp): while a pool is open, allocations
  // come from blocks kept apart for it until release_private_pool(). See
  // Note [Private pools] in caching_allocator.cpp. Default: nothing to keep
  // apart (an allocator whose memory no graph replays).
  virtual void open_private_pool(std::uint64_t /*pool*/) noexcept {}
  virtual void close_private_pool() noexcept {}
  virtual void release_private_pool(std::uint64_t /*pool*/) noexcept {}

 protected:
  // nullptr when the backend itself is out of memory.
  virtual void* raw_allocate(std::size_t bytes) noexcept = 0;
  virtual void raw_deallocate(void* ptr, std::size_t bytes) noexcept = 0;
  // Extra limit checks of a backend (the host's resident-size limit).
  virtual bool over_extra_limit(std::size_t /*bytes*/) noexcept { return false; }
  // The backend's own figures: stats() calls it last, to fill its fields.
  virtual void backend_stats(Stats& /*s*/) const noexcept {}
  // For OutOfMemory messages: the backend's state (capacity, reserved,
  // driver-free), one sentence or empty; and the limit's variable's name.
  virtual std::string describe_for_oom() const { return {}; }
  virtual const char* limit_variable() const noexcept { return "NDGC_MAX_BYTES"; }

 private:
  void* acquire(std::size_t bytes, bool raw);
  bool try_reserve(std::size_t bytes) noexcept;
  void unreserve(std::size_t bytes) noexcept;
  [[noreturn]] void throw_oom(std::size_t bytes, bool physical);

  Device device_;
  // current_ is exact (limits and the peak depend on it); the running
  // totals are sharded per thread (Note [Sharded counters]).
  std::atomic<std::uint64_t> current_{0}, peak_{0}, limit_{0};
  std::atomic<std::uint64_t> retries_{0}, ooms_{0};
};

// The allocator of `device`. CPU is built in; others are registered by their
// engine. Throws DeviceMismatch for a device nothing registered.
DeviceAllocator& allocator(Device device);
// Registers (nullptr: unregisters) the allocator of a GPU. A registered
// allocator with no limit of its own gets NDGC_GPU_MAX_BYTES.
void register_allocator(Device device, DeviceAllocator* allocator);
// The host (CPU) allocator: 64-byte aligned blocks from the C heap.
DeviceAllocator& host_allocator();

// Installed by lower layers (docs/design.md §2 keeps memory unaware of them).
// The pressure handler frees what it can (drain the reclaim queue, collect).
using PressureHandler = void (*)(Device device);
void set_pressure_handler(PressureHandler handler);
// Describes who holds memory on `device` (largest managers) for OutOfMemory.
using OomReporter = std::string (*)(Device device);
void set_oom_reporter(OomReporter reporter);

// Host bytes holding copies of `device`'s arrays (core/host_mirror.hpp),
// reported as Stats::host_mirror_bytes. `delta` may be negative.
void note_host_mirror_bytes(Device device, std::int64_t delta) noexcept;

// Test-only fault injection: the `n`-th native allocation from now (1 = the
// next one) fails as if over its limit; 0 disarms. Counts every device.
void fail_allocation_after(std::uint64_t n) noexcept;

}  // namespace ndgc::memory
