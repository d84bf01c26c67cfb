// Helpers shared by the test suites.
#pragma once

#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <ndgc/ndgc.hpp>

namespace ndgc::test {

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

}  // namespace ndgc::test
