// Seed state for the random factories. See random.cpp.
#pragma once

#include <cstdint>

namespace ndgc::ops {

struct RandomDraw {
  std::uint64_t seed, offset;
};
// Reserves `count` positions of the current stream.
RandomDraw reserve_random(std::uint64_t count) noexcept;

}  // namespace ndgc::ops
