// Fast contiguous float32 ↔ float16/bfloat16 copies (half_convert.cpp).
#pragma once

#include "ndgc/half.hpp"
#include "ops/engine.hpp"

namespace ndgc::ops::cpu {

// Converts a contiguous float32 view into a contiguous 16-bit one of the same
// shape, or back, and returns true; false (nothing done) for any other pair.
bool copy_half_rows(const TensorView& in, const TensorView& out);

// One contiguous run converted on the calling thread, with the bits of
// ndgc/half.hpp's scalar conversions (widening is exact; narrowing rounds to
// nearest even): for kernels that widen a row at a time.
void widen_half(const bfloat16* in, float* out, std::int64_t n) noexcept;
void widen_half(const float16* in, float* out, std::int64_t n) noexcept;
void narrow_half(const float* in, bfloat16* out, std::int64_t n) noexcept;
void narrow_half(const float* in, float16* out, std::int64_t n) noexcept;

}  // namespace ndgc::ops::cpu
