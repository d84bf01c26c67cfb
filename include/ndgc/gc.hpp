// The auto-close switch (docs/design.md §3). Off by default.
//
//   gc::enable();             // or NDGC_AUTOCLOSE=1 in the environment
//   { NDArray t = a + b; }    // t's last handle dies: its array is queued
//   gc::poll();               // ... and closed here, or by the next library
//                             // call on any thread
//   gc::Stats s = gc::stats();  // s.queued, s.reclaimed, s.reclaimed_bytes, s.drains
//
// With the switch on, an array whose last handle is destroyed is closed even
// though its manager is still open. With it off nothing changes: the array
// lives until its manager closes (DJL semantics); gc::sweep() closes arrays
// orphaned while it was off. Library-internal references (NDList, autograd
// tape, parameters) are handles too, so "no handle" means no reference at all.
//
// A library call drains a bounded batch (a few hundred arrays) and returns, so
// it never pays for orphans that other threads keep making while it runs;
// what is left is closed by the following calls. poll() and sweep() close
// everything orphaned before they were called, then return.
#pragma once

#include <cstdint>

namespace ndgc::gc {

enum class Detector : std::uint8_t {
  refcount,  // a handle count reaching zero queues the array
  trace,     // refcount, plus Boehm GC finding leaked handles (link ndgc::trace)
};

// Switches auto-close on. Thread-safe; arrays orphaned earlier are left for sweep().
void enable(Detector detector = Detector::refcount);
// Switches it off. Arrays already queued are still closed by the next drain.
void disable();
bool enabled() noexcept;
Detector detector() noexcept;

// Drains the reclaim queue now: closes every array orphaned before the call
// (waiting for a drain in progress on another thread), not the ones other
// threads orphan meanwhile. Returns the number of arrays closed.
std::uint64_t poll();
// Closes every open array that no handle reaches, whatever the switch says.
// Returns the number of arrays closed.
std::uint64_t sweep();

struct Stats {
  std::uint64_t queued = 0;           // arrays whose last handle died with the switch on
  std::uint64_t reclaimed = 0;        // arrays closed by a drain or sweep
  std::uint64_t reclaimed_bytes = 0;  // buffer bytes those closes freed
  std::uint64_t drains = 0;           // drains that found work
  std::uint64_t swept = 0;            // arrays closed by sweep()
  std::uint64_t leaked_handles = 0;   // trace detector: handles found unreachable
};
Stats stats() noexcept;

}  // namespace ndgc::gc
