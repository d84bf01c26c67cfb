// Helpers shared by the test suites.
#pragma once

#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <ndgc/ndgc.hpp>

#include "support/gpu_probe.hpp"

namespace ndgc::test {

// A workspace without learning: an arena of `bytes` from its first cycle.
inline workspace::Config fixed_arena(std::uint64_t bytes) {
  workspace::Config cfg;
  cfg.learning = workspace::Learning::none;
  cfg.initial_size = bytes;
  return cfg;
}

// Sets the auto-close switch for one test and restores the previous state.
class AutoClose {
 public:
  explicit AutoClose(bool on) : was_(gc::enabled()) { on ? gc::enable() : gc::disable(); }
  ~AutoClose() {
    gc::poll();
    was_ ? gc::enable() : gc::disable();
  }

 private:
  bool was_;
};

// Makes gpu(0) .. gpu(n-1) count as usable devices for one test, as a linked
// CUDA engine's probe would (only the probe: allocators and engines for those
// devices are the test's own business). Without it, Device::gpu(i) is refused
// with InvalidArgument when no engine is linked.
class FakeGpuProbe {
 public:
  explicit FakeGpuProbe(int n) {
    count_ = n;
    support::register_gpu_probe(&kProbe);
  }
  ~FakeGpuProbe() { support::register_gpu_probe(nullptr); }
  FakeGpuProbe(const FakeGpuProbe&) = delete;
  FakeGpuProbe& operator=(const FakeGpuProbe&) = delete;

 private:
  static int count() noexcept { return count_; }
  static std::string why_none() noexcept { return "no device in this fake"; }
  static inline int count_ = 0;
  static constexpr support::GpuProbe kProbe{count, why_none};
};

inline std::uint64_t host_bytes() { return memory::stats(Device::cpu()).current_bytes; }

// Stress tests: whether an ArrayClosed says auto-close or sweep closed the
// array, which invariant 1 forbids for an array a handle reaches (a manager
// close may legitimately close it).
inline bool closed_by_reclaim(const ArrayClosed& e) {
  const std::string what = e.what();
  return what.find("auto-close") != std::string::npos || what.find("sweep") != std::string::npos;
}

// Stress tests: closes one of the shared managers, chosen at random, after
// putting a fresh base manager named `name` in its place (under `mu`, so
// other threads never pick the closed one from the list; they may still hold
// it, which is the point).
inline void replace_and_close_one(std::mutex& mu, std::vector<ManagerRef>& managers, std::mt19937& rng,
                                  const std::string& name) {
  ManagerRef victim;
  {
    std::lock_guard lock(mu);
    std::size_t k = rng() % managers.size();
    victim = managers[k];
    managers[k] = NDManager::new_base_manager(name).release();
  }
  victim.close();
}

// Sets the intra-op thread count for its lifetime and restores the one before.
struct Threads {
  int saved = num_threads();
  explicit Threads(int n) { set_num_threads(n); }
  ~Threads() { set_num_threads(saved); }
  Threads(const Threads&) = delete;
  Threads& operator=(const Threads&) = delete;
};

}  // namespace ndgc::test
