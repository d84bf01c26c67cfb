// SpinLock: a one-byte lock for critical sections of a few instructions
// (an array's name and owner pointer). Yields after a short spin so a
// preempted holder on a 2-core machine does not stall the waiter for long.
#pragma once

#include <atomic>
#include <thread>

namespace ndgc::support {

class SpinLock {
 public:
  void lock() noexcept {
    for (int spins = 0; flag_.exchange(true, std::memory_order_acquire); ++spins) {
      while (flag_.load(std::memory_order_relaxed)) {
        if (++spins > 64) std::this_thread::yield();
      }
    }
  }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace ndgc::support
