// CPU kernels for the fused optimizer updates (see Note [Fused optimizer
// updates] in ops/optimizer_update.cpp).
//
// Contiguous float32/float64 views only (parameters, their gradients and the
// optimizer state are all created contiguous); anything else returns false
// and gets the composed update. See Note [One loop per update].
#include "ops/cpu/cpu_engine.hpp"
#include "ops/optimizer_math.hpp"
#include "support/parallel.hpp"

namespace ndgc::ops::cpu {
namespace {

// Note [One loop per update]
// Each update is a single loop that reads every element of the weight, the
// gradient and the state once and writes each once, vectorised by the
// compiler (`omp simd`; this file is built with -fopenmp-simd, which needs no
// OpenMP runtime, and -fno-math-errno, so sqrt is one instruction; and with
// -funroll-loops, which GCC takes as two vectors an iteration, so the loop's
// count and branch cost half as much: perf/RESULTS.md, issue 41). Written
// as three Eigen statements per cache-sized block, as before, the same maths
// loaded m and v twice and g twice and ran three loops: about 30 % more
// instructions per element (perf/RESULTS.md, issue 16). The maths of one
// element is ops/optimizer_math.hpp's, which the CUDA kernels run too;
// tests/ops/optimizer_kernels_test.cpp checks the loops against a scalar
// reference at lengths around the vector width.

// Parameters update in fixed chunks of kUpdateChunk elements on the pool;
// the chunks depend on the size alone, so the bits do not depend on the
// thread count (support/parallel.hpp). An update is a few operations per
// element that streams four arrays, so a piece pays for a hand-off only
// when it is four grains long: a 784 × 128 layer's update (100,352
// elements, about 25 µs) stays on the caller, where splitting it cost the
// batch-32 step more than it saved (perf/RESULTS.md, issue 29).
constexpr std::int64_t kUpdateChunk = 4 * support::kGrainSize;

template <class Chunk>
void by_chunks(std::int64_t n, Chunk&& chunk) {
  support::parallel_chunks(n, kUpdateChunk,
                           [&](std::int64_t, std::int64_t lo, std::int64_t hi) { chunk(lo, hi - lo); });
}

// `k` is taken by value: a copy the loop's stores cannot reach, so its
// constants stay in registers. Read through a reference, every one of them
// was broadcast again for each vector (six loads in a loop of 31
// instructions; perf/RESULTS.md, issue 41).
template <class T>
void adam_chunk(T* __restrict w, const T* __restrict g, T* __restrict m, T* __restrict v, std::int64_t n,
                const update::AdamConstants<T> k) {
  // Two loops, so that each is vectorised with `decay` a constant.
  if (k.wd != T(0)) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) update::adam_step(w[i], g[i], m[i], v[i], k, true);
  } else {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) update::adam_step(w[i], g[i], m[i], v[i], k, false);
  }
}

template <class T>
void adam(const TensorView& wv, const TensorView& gv, const TensorView& mv, const TensorView& vv,
          const AdamHyper& h) {
  update::AdamConstants<T> k = update::adam_constants<T>(h);
  if (h.steps) update::apply_steps(k, update::adam_steps(h));
  T* w = static_cast<T*>(wv.data);
  const T* g = static_cast<const T*>(gv.data);
  T* m = static_cast<T*>(mv.data);
  T* v = static_cast<T*>(vv.data);
  by_chunks(wv.size(), [&](std::int64_t lo, std::int64_t n) { adam_chunk(w + lo, g + lo, m + lo, v + lo, n, k); });
}

template <class T>
void sgd_chunk(T* __restrict w, const T* __restrict g, T* __restrict m, std::int64_t n, T lr, T mu, T wd) {
  // The four cases apart, so that each loop is vectorised with its branches
  // constant.
  if (m && wd != T(0)) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) update::sgd_step(w[i], g[i], m + i, lr, mu, wd, true);
  } else if (m) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) update::sgd_step(w[i], g[i], m + i, lr, mu, wd, false);
  } else if (wd != T(0)) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) update::sgd_step<T>(w[i], g[i], nullptr, lr, mu, wd, true);
  } else {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) update::sgd_step<T>(w[i], g[i], nullptr, lr, mu, wd, false);
  }
}

template <class T>
void sgd(const TensorView& wv, const TensorView& gv, const TensorView& mv, const SgdHyper& h) {
  T* w = static_cast<T*>(wv.data);
  const T* g = static_cast<const T*>(gv.data);
  T* m = static_cast<T*>(mv.data);
  const T lr = T(h.learning_rate), mu = T(h.momentum), wd = T(h.weight_decay);
  by_chunks(wv.size(), [&](std::int64_t lo, std::int64_t n) { sgd_chunk(w + lo, g + lo, m ? m + lo : nullptr, n, lr, mu, wd); });
}

}  // namespace

bool CpuEngine::serves_update(std::initializer_list<const TensorView*> views) noexcept {
  const DataType t = (*views.begin())->dtype;
  if (!is_floating(t)) return false;
  for (const TensorView* v : views)
    if (v->dtype != t || !v->is_contiguous()) return false;
  return true;
}

bool CpuEngine::adam_update(const TensorView& weight, const TensorView& grad, const TensorView& mean,
                            const TensorView& variance, const AdamHyper& hyper) {
  if (!serves_update({&weight, &grad, &mean, &variance})) return false;
  if (weight.dtype == DataType::float32) adam<float>(weight, grad, mean, variance, hyper);
  else adam<double>(weight, grad, mean, variance, hyper);
  return true;
}

bool CpuEngine::sgd_update(const TensorView& weight, const TensorView& grad, const TensorView& momentum,
                           const SgdHyper& hyper) {
  if (!(momentum.data ? serves_update({&weight, &grad, &momentum}) : serves_update({&weight, &grad}))) return false;
  if (weight.dtype == DataType::float32) sgd<float>(weight, grad, momentum, hyper);
  else sgd<double>(weight, grad, momentum, hyper);
  return true;
}

}  // namespace ndgc::ops::cpu
