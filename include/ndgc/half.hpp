// 16-bit floating element types: IEEE 754 binary16 (ndgc::float16) and
// bfloat16 (the top half of a float32).
//
//   ndgc::bfloat16 b(3.14159f);          // rounds to nearest, ties to even: 3.140625
//   float f = float(b);                   // exact
//   NDArray a = m.create(std::vector<ndgc::bfloat16>{b, b});
//   a.dtype() == DataType::bfloat16;  a.to_vector<ndgc::bfloat16>();
//
// They are storage types (docs/half-precision.md): ndgc's kernels widen them to
// float32, compute, and round once when they store. Conversions follow IEEE 754:
// round to nearest even, overflow to ±inf, NaN stays NaN (made quiet both
// ways, sign and leading payload kept), subnormals and -0 are kept. Both
// directions are constexpr bit arithmetic, the same on every CPU and in the
// CUDA kernels; the CPU's F16C instructions, where the copy kernels use them,
// give the same bits.
#pragma once

#include <bit>
#include <cstdint>

#if defined(__CUDACC__)
#define NDGC_HALF_HD __host__ __device__
#else
#define NDGC_HALF_HD
#endif

namespace ndgc {
namespace half_bits {

NDGC_HALF_HD constexpr std::uint32_t bits_of(float f) noexcept { return std::bit_cast<std::uint32_t>(f); }
NDGC_HALF_HD constexpr float float_of(std::uint32_t u) noexcept { return std::bit_cast<float>(u); }

// bfloat16 keeps float32's exponent, so rounding the low 16 bits away is the
// whole conversion: carries ripple into the exponent, and past the largest
// finite value into infinity, as IEEE rounding does.
NDGC_HALF_HD constexpr std::uint16_t bfloat16_from_float(float f) noexcept {
  const std::uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x0040u);  // NaN, made quiet
  return std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
NDGC_HALF_HD constexpr float float_from_bfloat16(std::uint16_t h) noexcept {
  const bool nan = (h & 0x7fffu) > 0x7f80u;
  return float_of((std::uint32_t(h) << 16) | (nan ? 0x00400000u : 0u));  // a signaling NaN arrives quiet
}

// binary16: 5 exponent bits (bias 15), 10 fraction bits. Magnitudes below
// 2^-14 are subnormal there; float32 holds every binary16 exactly.
NDGC_HALF_HD constexpr std::uint16_t float16_from_float(float f) noexcept {
  const std::uint32_t u = bits_of(f);
  const std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return std::uint16_t(sign | 0x7e00u | ((a >> 13) & 0x03ffu));  // NaN, made quiet
  if (a >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);  // ≥ 65520 rounds to inf (and inf stays)
  if (a >= 0x38800000u) {                                        // normal in binary16: ≥ 2^-14
    const std::uint32_t rounded = a + 0x0fffu + ((a >> 13) & 1u);
    return std::uint16_t(sign | ((rounded - 0x38000000u) >> 13));  // rebias 127 → 15
  }
  if (a < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): ±0
  // Subnormal: shift the full significand right so its unit is 2^-24, rounding to even.
  const std::uint32_t exponent = a >> 23;                   // 102 .. 112
  const std::uint32_t significand = (a & 0x007fffffu) | 0x00800000u;
  const std::uint32_t shift = 126u - exponent;              // 14 .. 24
  const std::uint32_t kept = significand >> shift;
  const std::uint32_t rest = significand & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1u);
  const std::uint32_t up = rest > half || (rest == half && (kept & 1u));
  return std::uint16_t(sign | (kept + up));
}
NDGC_HALF_HD constexpr float float_from_float16(std::uint16_t h) noexcept {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu, fraction = h & 0x03ffu;
  if (exponent == 0x1f)  // inf, or NaN made quiet
    return float_of(sign | 0x7f800000u | (fraction << 13) | (fraction ? 0x00400000u : 0u));
  if (exponent != 0) return float_of(sign | ((exponent + 112u) << 23) | (fraction << 13));
  // Zero or subnormal: fraction · 2^-24, exact in float32.
  const float magnitude = float(fraction) * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

}  // namespace half_bits

// The stored bits are public (`bits`) so that kernels and tests can read them;
// from_bits builds one from a pattern.
struct float16 {
  std::uint16_t bits = 0;
  constexpr float16() noexcept = default;
  NDGC_HALF_HD constexpr explicit float16(float f) noexcept : bits(half_bits::float16_from_float(f)) {}
  NDGC_HALF_HD constexpr explicit operator float() const noexcept { return half_bits::float_from_float16(bits); }
  NDGC_HALF_HD static constexpr float16 from_bits(std::uint16_t b) noexcept {
    float16 h;
    h.bits = b;
    return h;
  }
};

struct bfloat16 {
  std::uint16_t bits = 0;
  constexpr bfloat16() noexcept = default;
  NDGC_HALF_HD constexpr explicit bfloat16(float f) noexcept : bits(half_bits::bfloat16_from_float(f)) {}
  NDGC_HALF_HD constexpr explicit operator float() const noexcept { return half_bits::float_from_bfloat16(bits); }
  NDGC_HALF_HD static constexpr bfloat16 from_bits(std::uint16_t b) noexcept {
    bfloat16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2);

}  // namespace ndgc

#undef NDGC_HALF_HD
