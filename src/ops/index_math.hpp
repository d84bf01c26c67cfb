// Index arithmetic shared by the CPU and CUDA engines: strided
// and broadcast offsets, axis coalescing and reduction splits.
//
// Every function is NDGC_HD (__host__ __device__ under nvcc, plain inline
// otherwise), so the host tests in tests/ops/index_math_test.cpp run the same
// code that the GPU kernels run. Plain structs of fixed size (kMaxRank axes,
// up to 4 operands): they travel to a kernel by value as launch parameters.
// Offsets and counts are 64-bit throughout: a tensor may exceed 2^31 elements.
#pragma once

#include <cstdint>

#include "ndgc/shape.hpp"
#include "ops/engine.hpp"
#include "ops/host_device.hpp"

namespace ndgc::ops::index {

// N same-shaped operands walked together, axes coalesced (coalesce()).
template <int N>
struct Strided {
  int rank = 0;
  std::int64_t shape[kMaxRank] = {};
  std::int64_t strides[N][kMaxRank] = {};  // in elements of each operand

  // True when every operand is contiguous over the whole walk (one row of stride 1).
  NDGC_HD bool contiguous() const noexcept {
    if (rank == 0) return true;
    if (rank > 1) return false;
    for (int k = 0; k < N; ++k)
      if (strides[k][0] != 1) return false;
    return true;
  }
  NDGC_HD std::int64_t size() const noexcept {
    std::int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= shape[d];
    return n;
  }
};

// The element offsets (in elements) of row-major element `linear` of `w` in each operand.
template <int N>
NDGC_HD inline void offsets(const Strided<N>& w, std::int64_t linear, std::int64_t (&off)[N]) noexcept {
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = w.rank - 1; d >= 0; --d) {
    const std::int64_t len = w.shape[d];
    const std::int64_t i = linear % len;
    linear /= len;
    for (int k = 0; k < N; ++k) off[k] += i * w.strides[k][d];
  }
}

// The offset of row-major element `linear` in a single (shape, strides).
NDGC_HD inline std::int64_t offset_of(int rank, const std::int64_t* shape, const std::int64_t* strides,
                                      std::int64_t linear) noexcept {
  std::int64_t off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    off += (linear % shape[d]) * strides[d];
    linear /= shape[d];
  }
  return off;
}

// Coalesces the common shape of `views` (all have views[0]'s shape): drops
// axes of length 1 and merges neighbours whose strides line up in every
// operand, so a contiguous array of any rank becomes one axis of stride 1 and
// a broadcast bias add becomes (rows, cols) with strides (cols, 1) / (0, 1).
template <int N>
NDGC_HD inline Strided<N> coalesce(const TensorView* const (&views)[N]) noexcept {
  Strided<N> w;
  const TensorView& ref = *views[0];
  for (int d = 0; d < ref.rank; ++d) {
    if (ref.shape[d] == 1) continue;
    bool merge = w.rank > 0;
    for (int k = 0; merge && k < N; ++k) merge = w.strides[k][w.rank - 1] == views[k]->strides[d] * ref.shape[d];
    if (merge) {
      w.shape[w.rank - 1] *= ref.shape[d];
      for (int k = 0; k < N; ++k) w.strides[k][w.rank - 1] = views[k]->strides[d];
    } else {
      w.shape[w.rank] = ref.shape[d];
      for (int k = 0; k < N; ++k) w.strides[k][w.rank] = views[k]->strides[d];
      ++w.rank;
    }
  }
  return w;
}

// A reduction of `in` over the axes in a bit mask, seen as rows × cols: row r
// is the r-th combination of kept axes (row-major, so it is also the index
// into the contiguous output), col c the c-th of reduced axes. Axes of length
// 1 are dropped from both sides.
struct ReduceSplit {
  int kept_rank = 0, reduced_rank = 0;
  std::int64_t kept_shape[kMaxRank] = {}, kept_strides[kMaxRank] = {};
  std::int64_t reduced_shape[kMaxRank] = {}, reduced_strides[kMaxRank] = {};
  std::int64_t rows = 1, cols = 1;

  NDGC_HD std::int64_t row_offset(std::int64_t row) const noexcept {
    return offset_of(kept_rank, kept_shape, kept_strides, row);
  }
  NDGC_HD std::int64_t col_offset(std::int64_t col) const noexcept {
    return offset_of(reduced_rank, reduced_shape, reduced_strides, col);
  }
};

NDGC_HD inline ReduceSplit split_reduction(const TensorView& in, std::uint32_t axes) noexcept {
  ReduceSplit s;
  for (int d = 0; d < in.rank; ++d) {
    if (axes >> d & 1) {
      s.cols *= in.shape[d];
      if (in.shape[d] == 1) continue;
      s.reduced_shape[s.reduced_rank] = in.shape[d];
      s.reduced_strides[s.reduced_rank++] = in.strides[d];
    } else {
      s.rows *= in.shape[d];
      if (in.shape[d] == 1) continue;
      s.kept_shape[s.kept_rank] = in.shape[d];
      s.kept_strides[s.kept_rank++] = in.strides[d];
    }
  }
  return s;
}

// Note [Split rows]
// One block per row leaves a GPU idle when a reduction has few long rows (a
// full sum is one row). Such rows are cut into chunks of consecutive columns:
// a first pass reduces each (row, chunk) into a partial result, a second
// reduces each row's partials in chunk order (ops/reduce_math.hpp says how
// partials combine). Rows are cut only when there are fewer than
// `target_blocks` of them, into no more chunks than it takes to reach that
// many blocks, each at least `min_chunk` columns long (shorter ones would
// cost the second launch more than they save). No chunk is empty; only the
// last may be shorter than `length`.
struct ColumnChunks {
  std::int64_t count = 1;  // chunks per row; 1: the row is not cut
  std::int64_t length = 0;  // columns per chunk

  NDGC_HD std::int64_t begin(std::int64_t chunk) const noexcept { return chunk * length; }
  NDGC_HD std::int64_t end(std::int64_t chunk, std::int64_t cols) const noexcept {
    const std::int64_t e = (chunk + 1) * length;
    return e < cols ? e : cols;
  }
};

NDGC_HD inline ColumnChunks chunk_columns(std::int64_t rows, std::int64_t cols, std::int64_t target_blocks,
                                          std::int64_t min_chunk) noexcept {
  ColumnChunks c;
  c.length = cols;
  if (rows <= 0 || rows >= target_blocks || min_chunk <= 0 || cols < 2 * min_chunk) return c;
  const std::int64_t wanted = (target_blocks + rows - 1) / rows;  // chunks per row to reach the target
  const std::int64_t most = cols / min_chunk;                       // each at least min_chunk long
  const std::int64_t n = wanted < most ? wanted : most;
  if (n < 2) return c;
  c.length = (cols + n - 1) / n;
  c.count = (cols + c.length - 1) / c.length;
  return c;
}

}  // namespace ndgc::ops::index
