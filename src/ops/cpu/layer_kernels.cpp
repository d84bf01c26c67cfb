// CPU kernels of GELU, dropout and embedding (forward and backward).
//
// Element-wise work is split with parallel_for over elements (each element's
// value depends on nothing else: same bits for any split). Dropout draws its
// mask from the counter-based stream (ops/random_stream.hpp): element i keeps
// its value when unit(seed, offset + i) >= p, so the backward pass redraws
// the forward's mask from the same positions. Embedding's backward splits the
// embedding's columns among threads; each column adds the rows of its indices
// in index order, so repeated indices accumulate without atomics and the sum
// is the same bits for any thread count.
#include <cmath>
#include <memory>
#include <numbers>
#include <string>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ops/cpu/cpu_engine.hpp"
#include "ops/cpu/layer_dispatch.hpp"
#include "ops/cpu/strided.hpp"
#include "ops/random_stream.hpp"

namespace ndgc::ops::cpu {
namespace {

template <class T>
T phi_cdf(T x) {
  return T(0.5) * (T(1) + std::erf(x * T(std::numbers::sqrt2 / 2)));
}


// Indices of any integer dtype as int64, contiguous, checked against [0, rows).
template <class F>
void with_indices(const TensorView& indices, std::int64_t rows, const char* kernel, F&& f) {
  std::optional<Scratch> keep;
  const TensorView& iv = contiguous_or_copy(indices, keep);
  dispatch(iv.dtype, [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_floating_point_v<I> || std::is_same_v<I, bool>) {
      throw InvalidArgument(fmt::format("{}: indices must be integers, not {}", kernel, to_string(iv.dtype)));
    } else {
      const I* idx = static_cast<const I*>(iv.data);
      const std::int64_t n = iv.size();
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t k = std::int64_t(idx[i]);
        if (k < 0 || k >= rows)
          throw_embedding_index(indices, i, k, rows);
      }
      f(idx, n);
    }
  });
}

}  // namespace

void CpuEngine::gelu(const TensorView& x, const TensorView& out) {
  std::optional<Scratch> keep;
  const TensorView& xc = contiguous_or_copy(x, keep);
  floating(x.dtype, "gelu", [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(xc.data);
    T* o = static_cast<T*>(out.data);
    support::parallel_for(xc.size(), support::kGrainSize / 8, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i) o[i] = in[i] * phi_cdf(in[i]);
    });
  });
}

void CpuEngine::gelu_backward(const TensorView& x, const TensorView& g, const TensorView& dx) {
  std::optional<Scratch> kx, kg;
  const TensorView& xc = contiguous_or_copy(x, kx);
  const TensorView& gc = contiguous_or_copy(g, kg);
  floating(x.dtype, "gelu_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(xc.data);
    const T* gin = static_cast<const T*>(gc.data);
    T* d = static_cast<T*>(dx.data);
    const T density = T(std::numbers::inv_sqrtpi / std::numbers::sqrt2);  // 1 / √(2π)
    support::parallel_for(xc.size(), support::kGrainSize / 8, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i) {
        const T v = in[i];
        d[i] = gin[i] * (phi_cdf(v) + v * density * std::exp(T(-0.5) * v * v));
      }
    });
  });
}

void CpuEngine::dropout(const TensorView& x, double p, const RandomDraw& draw, const TensorView& out) {
  const RandomDraw at = random::start_of(draw);  // plain variables: clang 14 lambdas cannot capture bindings
  const std::uint64_t seed = at.seed, offset = at.offset;
  std::optional<Scratch> keep;
  const TensorView& xc = contiguous_or_copy(x, keep);
  floating(x.dtype, "dropout", [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(xc.data);
    T* o = static_cast<T*>(out.data);
    const T scale = T(1.0 / (1.0 - p));
    const std::uint64_t threshold = random::keep_threshold(p);
    support::parallel_for(xc.size(), support::kGrainSize / 4, [&](std::int64_t lo, std::int64_t hi) {
#pragma omp simd
      for (std::int64_t i = lo; i < hi; ++i) {
        const T kept = in[i] * scale;  // read whether kept or not: a select, not a masked load
        o[i] = random::keeps(seed, offset + std::uint64_t(i), threshold) ? kept : T(0);
      }
    });
  });
}

void CpuEngine::embedding(const TensorView& indices, const TensorView& weight, const TensorView& out) {
  const std::int64_t rows = weight.shape[0], dim = weight.shape[1];
  std::optional<Scratch> kw;
  const TensorView& wc = contiguous_or_copy(weight, kw);
  with_indices(indices, rows, "embedding", [&](const auto* idx, std::int64_t n) {
    floating(weight.dtype, "embedding", [&](auto tag) {
      using T = decltype(tag);
      const T* w = static_cast<const T*>(wc.data);
      T* o = static_cast<T*>(out.data);
      support::parallel_for(n, grain_for(dim), [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t i = lo; i < hi; ++i) {
          const T* src = w + std::int64_t(idx[i]) * dim;
          for (std::int64_t d = 0; d < dim; ++d) o[i * dim + d] = src[d];
        }
      });
    });
  });
}

void CpuEngine::embedding_backward(const TensorView& indices, const TensorView& g, const TensorView& dweight) {
  const std::int64_t rows = dweight.shape[0], dim = dweight.shape[1];
  std::optional<Scratch> kg;
  const TensorView& gc = contiguous_or_copy(g, kg);
  with_indices(indices, rows, "embedding_backward", [&](const auto* idx, std::int64_t n) {
    floating(dweight.dtype, "embedding_backward", [&](auto tag) {
      using T = decltype(tag);
      const T* gin = static_cast<const T*>(gc.data);
      T* dw = static_cast<T*>(dweight.data);
      support::parallel_for(dim, grain_for(n + rows), [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t d = lo; d < hi; ++d) dw[r * dim + d] = T(0);
        for (std::int64_t i = 0; i < n; ++i) {
          T* dst = dw + std::int64_t(idx[i]) * dim;
          const T* src = gin + i * dim;
          for (std::int64_t d = lo; d < hi; ++d) dst[d] += src[d];
        }
      });
    });
  });
}

}  // namespace ndgc::ops::cpu
