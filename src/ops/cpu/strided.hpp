// Strided iteration for the CPU kernels.
//
// dispatch() turns a runtime DataType into a typed call. for_each_row() walks
// up to four same-shaped views at once: it first coalesces axes (drops axes of
// length 1, merges neighbours whose strides line up in every operand), so a
// contiguous array of any rank becomes one row and a broadcast bias add
// becomes rows of (stride 1, stride 1, stride 1) or (1, 0, 1). The callback
// then runs a typed inner loop over one row: this is where the compiler's
// vectoriser (and Eigen, for contiguous float rows) does the real work.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ndgc/dtype.hpp"
#include "ops/engine.hpp"
#include "ops/random_stream.hpp"
#include "support/assert.hpp"
#include "support/parallel.hpp"

namespace ndgc::ops::cpu {

// The computing dtypes. float16 and bfloat16 never reach a typed kernel: the
// widening engine (ops/half_widening.hpp) hands them over as float32. Only
// copy() sees them, through dispatch_storage().
template <class F>
decltype(auto) dispatch(DataType t, F&& f) {
  switch (t) {
    case DataType::float32: return f(float{});
    case DataType::float64: return f(double{});
    case DataType::int32: return f(std::int32_t{});
    case DataType::int64: return f(std::int64_t{});
    case DataType::uint8: return f(std::uint8_t{});
    case DataType::boolean: break;
    case DataType::float16:
    case DataType::bfloat16:
      support::assertion_failed(__FILE__, __LINE__, "!is_half(t)", "a 16-bit view reached a float32 kernel");
  }
  return f(bool{});
}

// Every dtype, the 16-bit storage types included: for conversions.
template <class F>
decltype(auto) dispatch_storage(DataType t, F&& f) {
  if (t == DataType::float16) return f(float16{});
  if (t == DataType::bfloat16) return f(bfloat16{});
  return dispatch(t, std::forward<F>(f));
}

// Element-type conversion (floats to integers saturate, NaN becomes 0,
// anything to bool is "!= 0"): the one definition both engines run.
using random::convert;

template <std::size_t N>
struct Walk {
  int rank = 0;
  std::int64_t shape[kMaxRank];
  std::int64_t strides[N][kMaxRank];
};

// Coalesces the common shape of `views` (all have views[0]'s shape).
template <std::size_t N>
Walk<N> coalesce(const std::array<const TensorView*, N>& views) noexcept {
  Walk<N> w;
  const TensorView& ref = *views[0];
  for (int d = 0; d < ref.rank; ++d) {
    if (ref.shape[d] == 1) continue;
    bool merge = w.rank > 0;
    for (std::size_t k = 0; merge && k < N; ++k)
      merge = w.strides[k][w.rank - 1] == views[k]->strides[d] * ref.shape[d];
    if (merge) {
      w.shape[w.rank - 1] *= ref.shape[d];
      for (std::size_t k = 0; k < N; ++k) w.strides[k][w.rank - 1] = views[k]->strides[d];
    } else {
      w.shape[w.rank] = ref.shape[d];
      for (std::size_t k = 0; k < N; ++k) w.strides[k][w.rank] = views[k]->strides[d];
      ++w.rank;
    }
  }
  return w;
}

// Calls row(ptrs, inner_strides, n) for the rows, whole or cut, that hold
// elements [lo, hi) of w's row-major order; pointers are bytes, strides are
// in elements of each operand.
template <std::size_t N, class Row>
void for_each_row_in(const std::array<const TensorView*, N>& views, const Walk<N>& w, std::int64_t lo,
                     std::int64_t hi, Row&& row) {
  std::array<char*, N> p;
  std::array<std::int64_t, N> esize;
  for (std::size_t k = 0; k < N; ++k) {
    p[k] = static_cast<char*>(views[k]->data);
    esize[k] = std::int64_t(size_of(views[k]->dtype));
  }
  std::array<std::int64_t, N> inner{};
  if (w.rank == 0) {
    if (lo < hi) row(p, inner, std::int64_t(1));
    return;
  }
  const int last = w.rank - 1;
  for (std::size_t k = 0; k < N; ++k) inner[k] = w.strides[k][last];
  std::int64_t idx[kMaxRank] = {};
  // A walk from the start (every call outside the pool) needs no division.
  for (std::int64_t d = last, rest = lo; rest > 0 && d >= 0; --d) {
    idx[d] = rest % w.shape[d];
    rest /= w.shape[d];
    for (std::size_t k = 0; k < N; ++k) p[k] += idx[d] * w.strides[k][d] * esize[k];
  }
  for (std::int64_t left = hi - lo; left > 0;) {
    const std::int64_t n = std::min(w.shape[last] - idx[last], left);
    row(p, inner, n);
    left -= n;
    // Back to the row's start, then on to the next row.
    for (std::size_t k = 0; k < N; ++k) p[k] -= idx[last] * w.strides[k][last] * esize[k];
    idx[last] = 0;
    int d = last - 1;
    for (; d >= 0; --d) {
      for (std::size_t k = 0; k < N; ++k) p[k] += w.strides[k][d] * esize[k];
      if (++idx[d] < w.shape[d]) break;
      for (std::size_t k = 0; k < N; ++k) p[k] -= w.strides[k][d] * esize[k] * w.shape[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Every innermost row of the views, in order, on the calling thread.
template <std::size_t N, class Row>
void for_each_row(const std::array<const TensorView*, N>& views, Row&& row) {
  if (views[0]->size() == 0) return;
  for_each_row_in(views, coalesce(views), 0, views[0]->size(), row);
}

// The same rows for element-wise kernels, whose rows do not depend on one
// another: above the grain, cut into fixed chunks of support::kGrainSize
// elements that the pool runs in any order. The cuts depend on the shape
// alone, so each row piece, and with it which elements take Eigen's vector
// path and which its scalar tail, is the same at every thread count.
template <std::size_t N, class Row>
void parallel_for_each_row(const std::array<const TensorView*, N>& views, Row&& row) {
  const std::int64_t size = views[0]->size();
  if (size <= support::kGrainSize) {
    for_each_row(views, row);
    return;
  }
  const Walk<N> w = coalesce(views);
  support::parallel_chunks(size, support::kGrainSize, [&](std::int64_t, std::int64_t lo, std::int64_t hi) {
    for_each_row_in(views, w, lo, hi, row);
  });
}

}  // namespace ndgc::ops::cpu
