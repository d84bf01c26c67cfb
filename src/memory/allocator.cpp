// DeviceAllocator: accounting, limits and the out-of-memory path.
//
// The fast path is two relaxed fetch_adds (current, allocated) plus a peak
// update that is a plain load unless the peak moves. Limits are checked by
// reserving first (current += bytes) and undoing on failure, so two threads
// cannot both slip under the limit with the last free megabyte.
#include "memory/allocator.hpp"

#include "memory/workspace.hpp"

#include <array>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "support/options.hpp"
#include "support/gpu_probe.hpp"
#include "support/sharded_counters.hpp"

namespace ndgc::memory {
namespace {

// Running totals per device: four counters for each of cpu, gpu(0), gpu(1), ...
enum Total { kAllocatedBytes, kFreedBytes, kAllocations, kFrees, kTotals };
struct TotalsTag;
constinit support::ShardedCounters<kTotals * (1 + kMaxGpus), TotalsTag> g_totals;

std::atomic<PressureHandler> g_pressure{nullptr};
std::atomic<OomReporter> g_reporter{nullptr};
std::atomic<std::uint64_t> g_fail_countdown{0};

// Fault injection: true when this allocation is the one armed to fail.
bool injected_failure() noexcept {
  std::uint64_t n = g_fail_countdown.load(std::memory_order_relaxed);
  while (n != 0) {
    if (g_fail_countdown.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) return n == 1;
  }
  return false;
}

// Registered allocators of other devices; the host one is built in.
std::array<std::atomic<DeviceAllocator*>, kMaxGpus> g_gpu_allocators{};
std::array<std::atomic<std::uint64_t>, kMaxGpus> g_host_mirror_bytes{};

}  // namespace

bool DeviceAllocator::try_reserve(std::size_t bytes) noexcept {
  std::uint64_t lim = limit_.load(std::memory_order_relaxed);
  std::uint64_t now = current_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (lim != 0 && now > lim) {
    current_.fetch_sub(bytes, std::memory_order_relaxed);
    return false;
  }
  std::uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return true;
}

void DeviceAllocator::unreserve(std::size_t bytes) noexcept {
  current_.fetch_sub(bytes, std::memory_order_relaxed);
}

// Note [OOM ladder]
// An allocation over the limit, or one the backend refuses, is not an error
// yet: much of what is in use may be garbage, and much of what is reserved
// may be cached. The rungs, in order:
//   1. the pressure handler: core drains the reclaim queue (auto-close's
//      orphans are closed and their buffers freed); under the trace detector
//      it collects first, so leaked handles join the queue;
//   2. the backend's empty_cache(): a caching backend waits for pending
//      stream-ordered frees and gives every fully free segment back, those
//      that rung 1 just emptied included, so that memory cached in the wrong
//      pool or for the wrong stream can serve this request;
//   3. one retry; then OutOfMemory, counted in Stats::oom_count.
// Limits count bytes in use (current_), so only rung 1 helps an over-limit
// request; rung 2 still runs: it is cheap beside an OOM and keeps a process
// at its limit from also sitting on cached segments. An injected failure
// (fail_allocation_after) skips the ladder: it must fail.
void* DeviceAllocator::allocate(std::size_t bytes) { return acquire(bytes, true); }

void DeviceAllocator::charge(std::size_t bytes) { (void)acquire(bytes, false); }

void DeviceAllocator::uncharge(std::size_t bytes) noexcept {
  if (bytes == 0) return;
  current_.fetch_sub(bytes, std::memory_order_relaxed);
  g_totals.add(counter(kFreedBytes), bytes);
  g_totals.add(counter(kFrees), 1);
}

void* DeviceAllocator::acquire(std::size_t bytes, bool raw) {
  if (bytes == 0) return nullptr;
  // Near SIZE_MAX the accounting and a backend's own header arithmetic would
  // wrap around to a small size: refuse before any of it runs.
  if (bytes > kMaxAllocationBytes) [[unlikely]] {
    ooms_.fetch_add(1, std::memory_order_relaxed);
    throw OutOfMemory(fmt::format("OutOfMemory: allocating {} bytes on {}: more than any allocator can serve "
                                  "(at most {} bytes). Check the size computation: a negative size or an "
                                  "overflowed product of dimensions looks like this.",
                                  bytes, device_.to_string(), kMaxAllocationBytes),
                      bytes, limit(), current_.load(std::memory_order_relaxed));
  }
  bool injected = injected_failure();
  for (int attempt = 0;; ++attempt) {
    bool physical = !injected && over_extra_limit(bytes);
    if (!injected && !physical && try_reserve(bytes)) {
      if (void* p = raw ? raw_allocate(bytes) : this) {
        g_totals.add(counter(kAllocatedBytes), bytes);
        g_totals.add(counter(kAllocations), 1);
        return p;
      }
      unreserve(bytes);
    }
    if (attempt == 0 && !injected) {
      retries_.fetch_add(1, std::memory_order_relaxed);
      if (PressureHandler relieve = g_pressure.load(std::memory_order_acquire)) relieve(device_);
      empty_cache();
      continue;
    }
    ooms_.fetch_add(1, std::memory_order_relaxed);
    throw_oom(bytes, physical);
  }
}

void DeviceAllocator::deallocate(void* ptr, std::size_t bytes) noexcept {
  if (!ptr) return;
  raw_deallocate(ptr, bytes);
  current_.fetch_sub(bytes, std::memory_order_relaxed);
  g_totals.add(counter(kFreedBytes), bytes);
  g_totals.add(counter(kFrees), 1);
}

void DeviceAllocator::throw_oom(std::size_t bytes, bool physical) {
  std::uint64_t lim = physical ? physical_limit() : limit();
  std::uint64_t in_use = physical ? resident_bytes() : current_.load(std::memory_order_relaxed);
  std::string holders, backend = describe_for_oom();
  if (OomReporter report = g_reporter.load(std::memory_order_acquire)) holders = report(device_);
  std::string what =
      physical ? fmt::format("the process's resident size limit of {} (resident now: {})",
                             format_bytes(lim), format_bytes(in_use))
      : lim != 0 ? fmt::format("the {} limit of {} (in use: {})", device_.to_string(), format_bytes(lim),
                               format_bytes(in_use))
                 : fmt::format("the {} allocator's capacity (in use: {})", device_.to_string(),
                               format_bytes(in_use));
  throw OutOfMemory(
      fmt::format("OutOfMemory: allocating {} ({} bytes) on {} would exceed {}. {}{}"
                  "The reclaim queue was drained, cached memory given back (memory::empty_cache) and the "
                  "allocation retried. Try: close managers you no longer need, allocate per-step arrays in a "
                  "sub-manager, enable auto-close (gc::enable() or NDGC_AUTOCLOSE=1), use a smaller batch, "
                  "or raise the limit (memory::set_limit, {}).",
                  format_bytes(bytes), bytes, device_.to_string(), what,
                  backend.empty() ? std::string() : backend + " ",
                  holders.empty() ? std::string() : "Largest managers: " + holders + ". ", limit_variable()),
      bytes, lim, in_use);
}

Stats DeviceAllocator::stats() const noexcept {
  Stats s;
  s.current_bytes = current_.load(std::memory_order_relaxed);
  s.peak_bytes = peak_.load(std::memory_order_relaxed);
  s.allocated_bytes = g_totals.sum(counter(kAllocatedBytes));
  s.freed_bytes = g_totals.sum(counter(kFreedBytes));
  s.allocations = g_totals.sum(counter(kAllocations));
  s.frees = g_totals.sum(counter(kFrees));
  s.limit_bytes = limit_.load(std::memory_order_relaxed);
  s.alloc_retries = retries_.load(std::memory_order_relaxed);
  s.oom_count = ooms_.load(std::memory_order_relaxed);
  backend_stats(s);
  return s;
}

std::size_t DeviceAllocator::counter(int which) const noexcept {
  return std::size_t(device_.is_cpu() ? 0 : 1 + device_.index) * kTotals + std::size_t(which);
}

void DeviceAllocator::reset_peak() noexcept {
  peak_.store(current_.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

DeviceAllocator& allocator(Device device) {
  if (device.is_cpu() && device.index == 0) return host_allocator();
  if (!device.is_cpu() && device.index >= 0 && device.index < kMaxGpus) {
    if (DeviceAllocator* a = g_gpu_allocators[std::size_t(device.index)].load(std::memory_order_acquire))
      return *a;
    support::check_device(device, "memory");  // InvalidArgument: engine not linked, no GPU, index out of range
    if (DeviceAllocator* a = g_gpu_allocators[std::size_t(device.index)].load(std::memory_order_acquire))
      return *a;  // the probe's first query registered it
    throw DeviceMismatch(fmt::format(
        "memory: no allocator for {}: this build has no engine for that device (was ndgc built with "
        "CUDA, and is a GPU present?)",
        device.to_string()));
  }
  throw InvalidArgument(fmt::format("memory: {} is not a valid device", device.to_string()));
}

void register_allocator(Device device, DeviceAllocator* a) {
  if (device.is_cpu() || device.index < 0 || device.index >= kMaxGpus)
    throw InvalidArgument(fmt::format("memory: cannot register an allocator for {}", device.to_string()));
  if (a && a->limit() == 0) a->set_limit(support::options().gpu_max_bytes);
  g_gpu_allocators[std::size_t(device.index)].store(a, std::memory_order_release);
}

void set_pressure_handler(PressureHandler handler) { g_pressure.store(handler, std::memory_order_release); }
void set_oom_reporter(OomReporter reporter) { g_reporter.store(reporter, std::memory_order_release); }
void note_host_mirror_bytes(Device device, std::int64_t delta) noexcept {
  if (device.is_cpu() || device.index < 0 || device.index >= kMaxGpus) return;
  g_host_mirror_bytes[std::size_t(device.index)].fetch_add(std::uint64_t(delta), std::memory_order_relaxed);
}
void fail_allocation_after(std::uint64_t n) noexcept { g_fail_countdown.store(n, std::memory_order_relaxed); }

// ---- the public API of ndgc/memory.hpp --------------------------------------
Stats stats(Device device) {
  Stats s = allocator(device).stats();
  const WorkspaceTotals w = workspace_totals(device);
  s.workspace_capacity_bytes = w.capacity;
  s.workspace_used_bytes = w.used;
  s.workspace_spilled_bytes = w.spilled;
  if (!device.is_cpu())
    s.host_mirror_bytes = g_host_mirror_bytes[std::size_t(device.index)].load(std::memory_order_relaxed);
  return s;
}
void reset_peak(Device device) { allocator(device).reset_peak(); }
void set_limit(Device device, std::uint64_t bytes) { allocator(device).set_limit(bytes); }
std::uint64_t limit(Device device) { return allocator(device).limit(); }
void empty_cache(Device device) { allocator(device).empty_cache(); }

}  // namespace ndgc::memory
