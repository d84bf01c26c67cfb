// float32 products through oneDNN's sgemm, where the build has it.
//
// Note [oneDNN's sgemm for float32 products]
// Eigen's GEMM reaches about half of what this machine's cores can do on
// the products our models make; oneDNN's JIT-compiled sgemm reaches most of
// it (perf/RESULTS.md, "GEMM at one thread"). So a float32 product block of
// at least kExternalGemmWork multiply-adds goes to dnnl_sgemm. Each block is
// one call on the calling thread alone (Note [Products by fixed blocks]):
// the call holds OpenMP, oneDNN's CPU runtime in Debian's build, to one
// thread (omp_set_num_threads, restored after; an OpenMP setting belongs to
// the calling thread), so oneDNN never starts threads that would fight the
// intra-op pool, and a block's bits do not depend on the thread count.
// Without oneDNN (NDGC_ONEDNN=OFF, or libdnnl-dev missing), under Valgrind
// (whose CPU cannot run oneDNN's AVX-512 kernels) and for smaller blocks,
// Eigen computes the product.
#pragma once

#include <cstdint>

namespace ndgc::ops::cpu {

inline constexpr std::int64_t kExternalGemmWork = std::int64_t(1) << 15;

// Whether external_sgemm can compute products in this process.
bool external_sgemm_available() noexcept;

// c (m × n, row-major, leading dimension ldc) = a × b, or += with
// `accumulate`. a is m × k and b is k × n, each row-major (trans false) or
// column-major (trans true) with its leading dimension. Returns false when
// the product was not computed (no external GEMM here, or it refused).
bool external_sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                    std::int64_t lda, const float* b, std::int64_t ldb, bool accumulate, float* c,
                    std::int64_t ldc) noexcept;

}  // namespace ndgc::ops::cpu
