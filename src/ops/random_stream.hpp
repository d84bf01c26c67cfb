// The counter-based random streams both engines draw from.
//
// Element i of a call with (seed, offset) is a hash of (seed, offset + i) —
// splitmix64's finaliser, whose output passes BigCrush — turned into a double
// in [0, 1). Normals use Box-Muller on the pair (2i, 2i + 1). The result
// depends only on the seed and on how many numbers earlier calls drew, never
// on threads, on how the work is split, or on the device: the CPU engine and
// the CUDA kernels call these same functions. Uniform draws are bit-identical
// across devices (only correctly rounded + and ×, FMA contraction excluded, see
// Note [No FMA in the streams]); normal draws go through log and cos, whose
// last bit may differ between the host's libm and CUDA's.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ndgc/half.hpp"
#include "ops/host_device.hpp"  // NDGC_HD

namespace ndgc::ops {

// Positions [offset, offset + n) of the stream named by `seed`, for a call
// that draws n numbers. A draw reserved while a device graph is captured on
// its device has `graph_state` set: it then names device memory holding the
// (seed, base) of the replay that runs it, written before each replay, and
// `offset` counts from that base (Note [Draws in a device graph] in
// ops/random.cpp); `seed` is unused.
struct RandomDraw {
  std::uint64_t seed = 0, offset = 0;
  const std::uint64_t* graph_state = nullptr;
};

}  // namespace ndgc::ops

namespace ndgc::ops::random {

// Where a kernel's draw starts: the call's own (seed, offset), or, for a
// draw in a device graph, the replay's seed and base plus the draw's offset.
// Read on the device for a graph's kernels, so each replay draws anew.
NDGC_HD inline RandomDraw start_of(const RandomDraw& draw) noexcept {
  if (draw.graph_state == nullptr) return draw;
  return {draw.graph_state[0], draw.graph_state[1] + draw.offset, nullptr};
}

NDGC_HD inline std::uint64_t mix(std::uint64_t seed, std::uint64_t counter) noexcept {
  std::uint64_t z = seed + (counter + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

NDGC_HD inline double unit(std::uint64_t seed, std::uint64_t counter) noexcept {
  return double(mix(seed, counter) >> 11) * 0x1.0p-53;  // [0, 1)
}

// Dropout keeps element `counter` when unit(seed, counter) >= p. With m the
// 53-bit integer under unit(), m · 2^-53 >= p exactly when m >= ceil(p · 2^53)
// (p · 2^53 is exact: a power-of-two scale), so keeps() decides the same by
// an integer comparison against keep_threshold(p): no conversion to double,
// and a loop of it vectorises wherever 64-bit multiplies do (AVX-512).
NDGC_HD inline std::uint64_t keep_threshold(double p) noexcept {
  return p <= 0 ? 0 : std::uint64_t(::ceil(p * 0x1.0p53));
}
NDGC_HD inline bool keeps(std::uint64_t seed, std::uint64_t counter, std::uint64_t threshold) noexcept {
  return (mix(seed, counter) >> 11) >= threshold;
}

// Note [No FMA in the streams]
// nvcc contracts a + b * c into one fused multiply-add by default, which
// rounds once instead of twice; the host compiler (ISO C++ mode) does not.
// The streams spell the two roundings out on the device so that a seed gives
// the same bits on both.
NDGC_HD inline double affine(double low, double span, double u) noexcept {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(low, __dmul_rn(span, u));
#else
  return low + span * u;
#endif
}

// Converts between element types without undefined behaviour: floats going
// to integers saturate (NaN becomes 0), anything going to bool is "!= 0".
// (The CPU kernels use this one too, through cpu/strided.hpp.)
// float16 and bfloat16 go through float32 (exact one way; rounded once the
// other, except from float64 and wide integers, which round twice, as
// PyTorch's c10::Half(double) does).
template <class T>
inline constexpr bool kIsHalf = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

template <class To, class From>
NDGC_HD inline To convert(From v) noexcept {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (kIsHalf<From>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (kIsHalf<To>) {
    return To(convert<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (!(v == v)) return To(0);
    if (v <= From(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (v >= From(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

NDGC_HD inline double next_below(double x, double toward) noexcept { return ::nextafter(x, toward); }
NDGC_HD inline float next_below(float x, float toward) noexcept { return ::nextafterf(x, toward); }

// Element `counter` of a uniform draw in [low, high) as T. See Note [Uniform bounds] in cpu_engine.cpp.
template <class T>
NDGC_HD inline T uniform_at(double low, double high, std::uint64_t seed, std::uint64_t counter) noexcept {
  double x = affine(low, high - low, unit(seed, counter));
  if (x >= high && low < high) x = next_below(high, low);
  if constexpr (std::is_floating_point_v<T>) {
    T v = static_cast<T>(x);
    if (v >= static_cast<T>(high) && low < high) {
      T below = next_below(static_cast<T>(high), -std::numeric_limits<T>::infinity());
      if (below >= static_cast<T>(low)) v = below;
    }
    return v;
  } else {
    return convert<T>(::floor(x));
  }
}

// Element i of a normal draw: Box-Muller on counters (offset + 2i, offset + 2i + 1).
NDGC_HD inline double normal_at(double mean, double stddev, std::uint64_t seed, std::uint64_t offset,
                                std::uint64_t i) noexcept {
  const std::uint64_t c = offset + 2 * i;
  const double u1 = 1.0 - unit(seed, c);  // (0, 1]: log stays finite
  const double u2 = unit(seed, c + 1);
  constexpr double kTwoPi = 6.283185307179586476925286766559;  // == 2 * std::numbers::pi
  const double r = ::sqrt(-2.0 * ::log(u1)), c2 = ::cos(kTwoPi * u2);
#if defined(__CUDA_ARCH__)
  return __dadd_rn(mean, __dmul_rn(__dmul_rn(stddev, r), c2));
#else
  return mean + stddev * r * c2;
#endif
}

}  // namespace ndgc::ops::random
