// What the CPU can run, asked once (CPUID, and XGETBV for the registers the
// operating system saves): the kernels that use F16C or AVX512-BF16 choose
// their path at run time with these. Asked through the instructions rather
// than __builtin_cpu_supports, whose feature names differ between GCC and
// Clang versions. Under Valgrind, CPUID answers for Valgrind's CPU.
#pragma once

namespace ndgc::support {

bool cpu_has_f16c() noexcept;         // AVX and F16C, with the YMM state saved
bool cpu_has_avx512_bf16() noexcept;  // AVX512 F, BW, VL and BF16, with the ZMM state saved

}  // namespace ndgc::support
