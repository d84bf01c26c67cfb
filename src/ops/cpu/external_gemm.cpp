// external_sgemm (external_gemm.hpp): Note [oneDNN's sgemm for float32 products].
#include "ops/cpu/external_gemm.hpp"

#if NDGC_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif

#if NDGC_HAVE_ONEDNN
// libgomp's, which libdnnl links (declared here rather than through <omp.h>,
// so that nothing else of OpenMP reaches this library).
extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);
#endif

namespace ndgc::ops::cpu {
namespace {

bool under_valgrind() noexcept {
#ifdef RUNNING_ON_VALGRIND
  return RUNNING_ON_VALGRIND != 0;
#else
  return false;
#endif
}

}  // namespace

bool external_sgemm_available() noexcept {
#if NDGC_HAVE_ONEDNN
  static const bool available = !under_valgrind();
  return available;
#else
  return false;
#endif
}

bool external_sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                    std::int64_t lda, const float* b, std::int64_t ldb, bool accumulate, float* c,
                    std::int64_t ldc) noexcept {
#if NDGC_HAVE_ONEDNN
  if (!external_sgemm_available()) return false;
  const int threads = omp_get_max_threads();
  if (threads != 1) omp_set_num_threads(1);
  const dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb,
                                          accumulate ? 1.0f : 0.0f, c, ldc);
  if (threads != 1) omp_set_num_threads(threads);
  return status == dnnl_success;
#else
  (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb, (void)accumulate,
      (void)c, (void)ldc;
  return false;
#endif
}

}  // namespace ndgc::ops::cpu
