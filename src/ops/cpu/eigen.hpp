// Eigen, for the CPU kernels, without GCC 12's false warnings.
//
// With AVX-512 (-march=native on a machine that has it) GCC 12 reports
// -Wmaybe-uninitialized and -Wuninitialized from inside its own
// avx512fintrin.h wherever Eigen's packet code is inlined (GCC bug 105593:
// the intrinsics' deliberately undefined "undefined" operands). Every CPU
// kernel file includes Eigen through this header, which silences exactly
// those two warnings for Eigen's and the intrinsics' headers, and for nothing
// else.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>  // first here, so its lines are inside the pragmas
#endif
#include <Eigen/Core>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
