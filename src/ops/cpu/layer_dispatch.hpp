// Dtype dispatch and grain sizes for the CPU layer kernels (conv, pooling,
// normalisation, dropout, embedding), which serve float32 and float64 only.
#pragma once

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "ndgc/dtype.hpp"
#include "ndgc/error.hpp"
#include "support/parallel.hpp"

namespace ndgc::ops::cpu {

template <class F>
void floating(DataType t, const char* kernel, F&& f) {
  if (t == DataType::float32) return f(float{});
  if (t == DataType::float64) return f(double{});
  throw InvalidArgument(fmt::format("{}: float32 or float64 only, not {}", kernel, to_string(t)));
}

// Kernels that only move values (im2col): 16-bit values move as their bits,
// std::uint16_t, whose 0 is +0.0 in both 16-bit formats.
template <class F>
void moving(DataType t, const char* kernel, F&& f) {
  if (is_half(t)) return f(std::uint16_t{});
  floating(t, kernel, std::forward<F>(f));
}

// Items per piece of a parallel_for when each item costs about `work` element operations.
inline std::int64_t grain_for(std::int64_t work) {
  return std::max<std::int64_t>(1, support::kGrainSize / std::max<std::int64_t>(1, work));
}

}  // namespace ndgc::ops::cpu
