// CPUID and XGETBV, once. See support/cpu_features.hpp.
#include "support/cpu_features.hpp"

#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace ndgc::support {
namespace {

struct Features {
  bool f16c = false, avx512_bf16 = false;
};

#if defined(__x86_64__)
std::uint64_t saved_state() noexcept {  // XCR0: which register files the OS saves
  std::uint32_t eax = 0, edx = 0;
  asm volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (std::uint64_t(edx) << 32) | eax;
}

Features probe() noexcept {
  Features f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
  if (!osxsave) return f;
  const std::uint64_t xcr0 = saved_state();
  const bool ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6;
  f.f16c = avx && f16c && ymm;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  const bool avx512 = (b & (1u << 16)) && (b & (1u << 30)) && (b & (1u << 31));  // F, BW, VL
  const unsigned max_sub = a;
  if (max_sub < 1 || !__get_cpuid_count(7, 1, &a, &b, &c, &d)) return f;
  f.avx512_bf16 = avx512 && zmm && (a & (1u << 5));
  return f;
}

const Features& features() noexcept {
  static const Features f = probe();
  return f;
}
#else
const Features& features() noexcept {  // no such features off x86-64
  static const Features none;
  return none;
}
#endif

}  // namespace

bool cpu_has_f16c() noexcept { return features().f16c; }
bool cpu_has_avx512_bf16() noexcept { return features().avx512_bf16; }

}  // namespace ndgc::support
