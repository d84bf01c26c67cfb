// Fast contiguous float32 ↔ float16/bfloat16 copies (half_convert.cpp).
#pragma once

#include "ops/engine.hpp"

namespace ndgc::ops::cpu {

// Converts a contiguous float32 view into a contiguous 16-bit one of the same
// shape, or back, and returns true; false (nothing done) for any other pair.
bool copy_half_rows(const TensorView& in, const TensorView& out);

}  // namespace ndgc::ops::cpu
