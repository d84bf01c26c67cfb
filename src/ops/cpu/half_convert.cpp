// Contiguous conversions between float32 and the 16-bit storage types: the
// copies that the widening engine (ops/half_widening.hpp) runs around every
// 16-bit kernel call, so they must run at memory speed.
//
// float16 uses F16C (vcvtps2ph with round-to-nearest-even, vcvtph2ps) when
// the CPU has it, chosen at run time. bfloat16 uses plain integer arithmetic
// that the compiler vectorises: AVX512-BF16's vcvtneps2bf16 flushes
// subnormals to zero, which IEEE rounding does not. Every path gives the bits
// of ndgc/half.hpp's scalar functions (tests/ops/half_copy_test.cpp checks
// each against them). Chunks of the intra-op pool split the elements;
// each element's result depends on that element alone, so the bits are
// the same for any thread count.
#include "ops/cpu/half_convert.hpp"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ndgc/half.hpp"
#include "support/cpu_features.hpp"
#include "support/parallel.hpp"

namespace ndgc::ops::cpu {
namespace {

void narrow_bfloat16(const float* in, std::uint16_t* out, std::int64_t n) noexcept {
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, in + i, 4);
    const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const std::uint32_t quiet = (u >> 16) | 0x0040u;
    out[i] = std::uint16_t((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
  }
}

void widen_bfloat16(const std::uint16_t* in, float* out, std::int64_t n) noexcept {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t h = in[i];
    const std::uint32_t u = (h << 16) | ((h & 0x7fffu) > 0x7f80u ? 0x00400000u : 0u);  // NaN made quiet
    std::memcpy(out + i, &u, 4);
  }
}

void narrow_float16_portable(const float* in, std::uint16_t* out, std::int64_t n) noexcept {
  for (std::int64_t i = 0; i < n; ++i) out[i] = half_bits::float16_from_float(in[i]);
}
void widen_float16_portable(const std::uint16_t* in, float* out, std::int64_t n) noexcept {
  for (std::int64_t i = 0; i < n; ++i) out[i] = half_bits::float_from_float16(in[i]);
}

#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void narrow_float16_f16c(const float* in, std::uint16_t* out,
                                                             std::int64_t n) noexcept {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  narrow_float16_portable(in + i, out + i, n - i);
}
__attribute__((target("avx,f16c"))) void widen_float16_f16c(const std::uint16_t* in, float* out,
                                                            std::int64_t n) noexcept {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  widen_float16_portable(in + i, out + i, n - i);
}
#endif

void narrow_float16(const float* in, std::uint16_t* out, std::int64_t n) noexcept {
#if defined(__x86_64__)
  if (support::cpu_has_f16c()) return narrow_float16_f16c(in, out, n);
#endif
  narrow_float16_portable(in, out, n);
}
void widen_float16(const std::uint16_t* in, float* out, std::int64_t n) noexcept {
#if defined(__x86_64__)
  if (support::cpu_has_f16c()) return widen_float16_f16c(in, out, n);
#endif
  widen_float16_portable(in, out, n);
}

template <class F>
void in_chunks(std::int64_t n, F&& f) {
  support::parallel_chunks(n, 4 * support::kGrainSize,
                           [&](std::int64_t, std::int64_t lo, std::int64_t hi) { f(lo, hi); });
}

}  // namespace

bool copy_half_rows(const TensorView& in, const TensorView& out) {
  if (!in.is_contiguous() || !out.is_contiguous() || in.size() == 0) return false;
  const bool narrowing = in.dtype == DataType::float32 && is_half(out.dtype);
  const bool widening = is_half(in.dtype) && out.dtype == DataType::float32;
  if (!narrowing && !widening) return false;
  const bool bf16 = out.dtype == DataType::bfloat16 || in.dtype == DataType::bfloat16;
  in_chunks(in.size(), [&](std::int64_t lo, std::int64_t hi) {
    if (narrowing) {
      const float* x = static_cast<const float*>(in.data) + lo;
      std::uint16_t* o = static_cast<std::uint16_t*>(out.data) + lo;
      bf16 ? narrow_bfloat16(x, o, hi - lo) : narrow_float16(x, o, hi - lo);
    } else {
      const std::uint16_t* x = static_cast<const std::uint16_t*>(in.data) + lo;
      float* o = static_cast<float*>(out.data) + lo;
      bf16 ? widen_bfloat16(x, o, hi - lo) : widen_float16(x, o, hi - lo);
    }
  });
  return true;
}

// bfloat16 and float16 hold their bits as their one member, so an array of
// them is an array of those bits.
static_assert(sizeof(bfloat16) == 2 && sizeof(float16) == 2);
void widen_half(const bfloat16* in, float* out, std::int64_t n) noexcept {
  widen_bfloat16(reinterpret_cast<const std::uint16_t*>(in), out, n);
}
void widen_half(const float16* in, float* out, std::int64_t n) noexcept {
  widen_float16(reinterpret_cast<const std::uint16_t*>(in), out, n);
}
void narrow_half(const float* in, bfloat16* out, std::int64_t n) noexcept {
  narrow_bfloat16(in, reinterpret_cast<std::uint16_t*>(out), n);
}
void narrow_half(const float* in, float16* out, std::int64_t n) noexcept {
  narrow_float16(in, reinterpret_cast<std::uint16_t*>(out), n);
}

}  // namespace ndgc::ops::cpu
