// Helpers for the trace detector's tests.
//
// The collector is conservative: a stale word that looks like a pointer
// keeps its object alive. Measured here: unused slots of a test's own frame
// still hold what the previous test left at the same depth (a key freed
// there and reused by this test looks reachable), and the most recently
// allocated object of a size class can survive until more are allocated.
// A third source sits in Boehm itself: during marking, its saved registers
// (scanned as a root) held the start address of the heap block its marker
// had visited last, so the first object of that block stayed reachable
// collection after collection (measured with gdb and a watchpoint on the
// mark byte, Debian's 8.2.2: a leaked key at a block start was retained 220
// times in a row). Fresh short-lived blocks move that address on.
// Tests that expect something to be found unreachable therefore run their
// body in a non-inlined function called on a wiped stack (run_clean), make
// the garbage in further non-inlined functions, and collect a few times,
// allocating handles, keys, collectable objects and key-sized blocks in
// between (churn).
#pragma once

#include <ndgc/ndgc.hpp>
#include <ndgc/trace.hpp>

#include <cstring>
#include <functional>

#include <gc/gc.h>

#include "core/key.hpp"
#include "test_util.hpp"

namespace ndgc::test {

// Switches the trace detector on for one test and restores the previous state.
class TraceOn {
 public:
  TraceOn() : was_(gc::enabled()), detector_(gc::detector()) { gc::enable(gc::Detector::trace); }
  ~TraceOn() {
    gc::poll();
    if (!was_) gc::disable();
    else gc::enable(detector_);
  }

 private:
  bool was_;
  gc::Detector detector_;
};

// Allocates (and drops) `new NDArray` objects, keys and collectable memory,
// so that no leaked object is the most recent of its kind.
[[gnu::noinline]] inline void churn() {
  NDManager scratch = NDManager::new_base_manager("churn");
  for (int i = 0; i < 64; ++i) delete new NDArray(scratch.zeros({1}));
  for (int i = 0; i < 64; ++i) trace::detail::collectable_free(trace::detail::collectable_allocate(64));
  for (int i = 0; i < 512; ++i) (void)GC_malloc_atomic(sizeof(detail::Key));  // ~20 blocks of garbage
}

[[gnu::noinline]] inline void wipe_stack() {
  volatile unsigned char area[256 * 1024];
  std::memset(const_cast<unsigned char*>(area), 0, sizeof(area));
}

// Runs `body` in a frame below a wiped stack area.
[[gnu::noinline]] inline void run_clean(void (*body)()) {
  wipe_stack();
  body();
  wipe_stack();
}

// Collects until the leaked-handle count holds still for three collections:
// leaks left by earlier tests (found late, see above) are counted before a
// test takes its baseline.
inline void settle() {
  std::uint64_t last = ~std::uint64_t(0);
  for (int i = 0, stable = 0; i < 30 && stable < 3; ++i) {
    churn();
    wipe_stack();
    gc::collect();
    std::uint64_t now = gc::stats().leaked_handles;
    stable = now == last ? stable + 1 : 0;
    last = now;
  }
}

// Collects (after wiping the stack) until `done` holds, at most `tries` times.
inline bool collect_until(const std::function<bool()>& done, int tries = 20) {
  for (int i = 0; i < tries; ++i) {
    churn();
    wipe_stack();
    gc::collect();
    if (done()) return true;
  }
  return false;
}

}  // namespace ndgc::test
