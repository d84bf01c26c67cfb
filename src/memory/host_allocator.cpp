// The host allocator: 64-byte aligned blocks, with the NDGC_MAX_BYTES and
// NDGC_MAX_PHYSICAL_BYTES limits.
//
// Small blocks come from the C heap through the per-thread block cache (Note
// [Host block cache]). Alignment: glibc's memalign costs ~670 instructions
// per call (callgrind, a 16 KiB block), more than a 64×64 add itself; a block
// 64 bytes larger, rounded up, costs nothing extra. Blocks of
// kLargeBlockBytes and more are mapped by ndgc and stay mapped in the
// large-block cache (Note [Large host blocks]), 512-byte aligned. Sanitizer builds
// and runs under Memcheck use aligned_alloc and no cache, so that they see each
// buffer's exact bounds.
//
// The resident-size check reads /proc/self/statm, a system call of a few
// microseconds, so it runs at most once per kPhysicalCheckBytes allocated and
// is approximate by that much. Alignment 64 keeps Eigen's vectorised loads
// aligned and arrays off each other's cache lines.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#endif

#include "memory/allocator.hpp"
#include "memory/block_cache.hpp"
#include "memory/large_block_cache.hpp"
#include "support/options.hpp"
#include "support/sanitizers.hpp"

// Exact allocations (no block cache, so a checker sees every buffer's bounds
// and every free): in sanitizer builds (support/sanitizers.hpp), with
// -DNDGC_EXACT_ALLOCATIONS=1, and in any build that runs under Valgrind's
// Memcheck (asked once). Only Memcheck answers
// VALGRIND_GET_VBITS (1: done; 0 from any other tool and outside Valgrind),
// so Callgrind counts the allocator that ships (perf/callgrind_step.sh).
#ifndef NDGC_EXACT_ALLOCATIONS
#define NDGC_EXACT_ALLOCATIONS (NDGC_ASAN || NDGC_TSAN)
#endif

namespace ndgc::memory {
namespace {

constexpr std::size_t kAlignment = 64;
constexpr std::uint64_t kPhysicalCheckBytes = 1 << 20;

std::atomic<std::uint64_t> g_physical_limit{0};

class HostAllocator final : public DeviceAllocator {
 public:
  HostAllocator() : DeviceAllocator(Device::cpu()) {
    const auto& o = support::options();
    set_limit(o.max_bytes);
    g_physical_limit.store(o.max_physical_bytes, std::memory_order_relaxed);
    set_large_cache_budget(o.host_cache_bytes);
  }

 protected:
  void* raw_allocate(std::size_t bytes) noexcept override {
    if (exact_) return std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    if (bytes >= kLargeBlockBytes) return large_allocate(bytes);
    std::uint8_t size_class;
    auto* raw = static_cast<unsigned char*>(cache_allocate(bytes + kAlignment, size_class));
    if (!raw) return nullptr;
    // malloc aligns to 16, so the offset is 16, 32, 48 or 64: room for two bytes
    // below the aligned pointer, the offset back to the block and its size class.
    std::size_t offset = kAlignment - (reinterpret_cast<std::uintptr_t>(raw) & (kAlignment - 1));
    unsigned char* aligned = raw + offset;
    aligned[-1] = static_cast<unsigned char>(offset);
    aligned[-2] = size_class;
    return aligned;
  }
  void raw_deallocate(void* ptr, std::size_t bytes) noexcept override {
    if (exact_) return std::free(ptr);
    if (bytes >= kLargeBlockBytes) return large_free(ptr);
    auto* aligned = static_cast<unsigned char*>(ptr);
    cache_free(aligned - aligned[-1], aligned[-2]);
  }

  // memory::empty_cache(Device::cpu()) and the OOM ladder: this thread's
  // small cached blocks and every cached large one.
  void empty_cache() noexcept override {
    flush_thread_cache();
    release_large_blocks();
  }

  // Reserved: what ndgc holds from the system for arrays, in use or cached.
  void backend_stats(Stats& s) const noexcept override {
    const LargeCacheStats large = large_cache_stats();
    s.cached_bytes = cached_bytes() + large.cached_bytes;
    s.reserved_bytes = s.current_bytes + s.cached_bytes;
    s.segments = large.mapped_blocks;
  }

  bool over_extra_limit(std::size_t bytes) noexcept override {
    std::uint64_t lim = g_physical_limit.load(std::memory_order_relaxed);
    if (lim == 0) return false;
    std::uint64_t since = since_check_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    if (since < kPhysicalCheckBytes && bytes < kPhysicalCheckBytes) return false;
    since_check_.store(0, std::memory_order_relaxed);
    return resident_bytes() + bytes > lim;
  }

 private:
  static bool exact() noexcept {
#ifdef VALGRIND_GET_VBITS
    char probe = 0, vbits = 0;
    if (VALGRIND_GET_VBITS(&probe, &vbits, 1) != 0) return true;
#endif
    return NDGC_EXACT_ALLOCATIONS != 0;
  }

  const bool exact_ = exact();
  std::atomic<std::uint64_t> since_check_{0};
};

}  // namespace

DeviceAllocator& host_allocator() {
  static HostAllocator host;
  return host;
}

void set_physical_limit(std::uint64_t bytes) {
  host_allocator();  // so the environment's value cannot overwrite this one later
  g_physical_limit.store(bytes, std::memory_order_relaxed);
}
std::uint64_t physical_limit() {
  host_allocator();
  return g_physical_limit.load(std::memory_order_relaxed);
}

std::uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long pages_total = 0, pages_resident = 0;
  int n = std::fscanf(f, "%llu %llu", &pages_total, &pages_resident);
  std::fclose(f);
  return n == 2 ? pages_resident * std::uint64_t(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace ndgc::memory
