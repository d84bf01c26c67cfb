// Seed state for the random factories and dropout. See random.cpp.
#pragma once

#include <cstdint>

#include "ndgc/device.hpp"
#include "ops/random_stream.hpp"  // RandomDraw

namespace ndgc::ops {

// Reserves `count` positions of the current stream, for a draw on `device`.
// While this thread captures a device graph on `device` (GraphDraws), the
// positions come from the graph's own stream instead: see Note [Draws in a
// device graph].
RandomDraw reserve_random(std::uint64_t count, Device device) noexcept;
// Reserves `count` positions of the current stream, whatever this thread
// captures (a replay's base).
RandomDraw reserve_random(std::uint64_t count) noexcept;

// The draws of one capture, on the capturing thread, while it lives: draws
// for `device` are relative to `state` (device memory: the replay's seed and
// base, two uint64). span() is how many positions they took, which each
// replay reserves from the current stream. One at a time per thread.
class GraphDraws {
 public:
  GraphDraws(Device device, const std::uint64_t* state) noexcept;
  ~GraphDraws();
  GraphDraws(const GraphDraws&) = delete;
  GraphDraws& operator=(const GraphDraws&) = delete;
  std::uint64_t span() const noexcept;
};

}  // namespace ndgc::ops
