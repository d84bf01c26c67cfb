// Eigen, for the CPU kernels, without GCC 12's false warnings.
//
// With AVX-512 (-march=native on a machine that has it) GCC 12 reports
// -Wmaybe-uninitialized and -Wuninitialized from inside its own
// avx512fintrin.h wherever Eigen's packet code is inlined (GCC bug 105593:
// the intrinsics' deliberately undefined "undefined" operands). Every CPU
// kernel file includes Eigen through this header, which silences exactly
// those two warnings for Eigen's and the intrinsics' headers, and for nothing
// else.
//
// Note [GEMM blocking on the stack]
// Eigen's GEMM packs its operands into two blocking buffers, on the stack up
// to EIGEN_STACK_ALLOCATION_LIMIT bytes each (128 KiB by default) and on the
// heap above that. A training step's weight-gradient GEMMs cross the default
// (the demo MLP's [128, 32] x [32, 784]: 301 KiB; the LSTM's input projection:
// 172 KiB), one malloc and free per step each. At 512 KiB each they stay on
// the stack: at most 1 MiB for one GEMM, against glibc's default 8 MiB thread
// stacks (and under Valgrind's 2 MB stack-switch threshold); larger products
// still go to the heap. Each GEMM frees what it allocated, so translation
// units built with another limit (perf/'s plain Eigen loop) mix safely.
#pragma once

#ifndef EIGEN_STACK_ALLOCATION_LIMIT
#define EIGEN_STACK_ALLOCATION_LIMIT (512 << 10)
#endif

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
