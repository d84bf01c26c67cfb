// Helpers shared by the test suites.
#pragma once

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

}  // namespace ndgc::test
