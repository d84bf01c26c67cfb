// CPU matrix products: oneDNN's matmul for float32 where the build has it
// (Note [Products through oneDNN]), Eigen's blocked GEMM for the rest,
// batched over leading axes.
//
// Each operand matrix is mapped without a copy when either of its last two
// axes has stride 1: row-major with an outer stride, or column-major (a
// transposed view) with an outer stride. Only other layouts are copied.
#include <algorithm>
#include <type_traits>

#include "ops/cpu/cpu_engine.hpp"
#include "ops/cpu/eigen.hpp"
#include "ops/cpu/onednn_gemm.hpp"
#include "ops/cpu/strided.hpp"
#include "support/parallel.hpp"

namespace ndgc::ops::cpu {
namespace {

template <class T>
using RowMajor = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                            Eigen::OuterStride<>>;
template <class T>
using ColMajor = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>, 0,
                            Eigen::OuterStride<>>;
template <class T>
using OutMat = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                          Eigen::OuterStride<>>;

// Calls f(matrix expression) with `m` mapped as rows × cols from (row stride, col stride).
template <class T, class F>
void with_matrix(const T* data, std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs, F&& f) {
  // A single row or column has no meaningful stride along its length-1 axis.
  if ((cs == 1 || cols <= 1) && (rs >= cols || rows <= 1)) {
    f(RowMajor<T>(data, rows, cols, Eigen::OuterStride<>(rows <= 1 ? cols : rs)));
  } else if ((rs == 1 || rows <= 1) && (cs >= rows || cols <= 1)) {
    f(ColMajor<T>(data, rows, cols, Eigen::OuterStride<>(cols <= 1 ? rows : cs)));
  } else {
    // Mapped like any row-major operand: one instantiation fewer of every
    // product below.
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> copy(rows, cols);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) copy(i, j) = data[i * rs + j * cs];
    f(RowMajor<T>(copy.data(), rows, cols, Eigen::OuterStride<>(std::max<std::int64_t>(cols, 1))));
  }
}

// Note [Products by fixed tiles]
// A product of at least kSplitWork multiply-adds is cut into tiles of the
// output, up to 16 of them, each one GEMM (oneDNN's or Eigen's) of its rows of A and its
// columns of B; the pool runs the tiles. The cut depends on m, n and k alone,
// never on the thread count, so every output element goes through the same
// kernel path (full register tile or remainder) and the same k-blocking at
// every thread count: the same bits.
// - Usually the larger output dimension is cut into up to 16 blocks of at
//   least 64. Each block packs the whole shared operand again: k·n (or m·k)
//   against the block's (m/16)·k·n multiply-adds.
// - When both output dimensions are at least kSquareSide, that repacking
//   streams a large operand from memory 16 times (at 2048³, 16 MB each
//   time), so the output is cut 4 × 4 instead, and each tile packs a quarter
//   of each operand. At 2048³ on one core this took ndgc from 0.80-0.91× of
//   one unsplit Eigen GEMM to 0.98-1.01× (perf/RESULTS.md, issue 40). Squarer
//   tiles for the other shapes measured no better, and some worse.
//   oneDNN's products keep the blocks, 8 of them there rather than 16: a
//   tile of the 4 × 4 grid is padded on both sides and must be copied (Note
//   [Products through oneDNN]). At 2048³ the grid measured 81 GFLOP/s, 16
//   blocks 95-98 and 8 blocks 99-104, against 102-103 for one unsplit call.
constexpr std::int64_t kSplitWork = std::int64_t(1) << 22;
constexpr std::int64_t kMinSide = 64, kSquareSide = 1024;

struct Tiles {
  std::int64_t rows, cols;            // of a tile; the last of each axis may be shorter
  std::int64_t down = 1, across = 1;  // tiles along m and along n
  std::int64_t count() const { return down * across; }
};

// ⌈length / parts⌉ rounded up to a multiple of 16 (whole register tiles).
std::int64_t tile_side(std::int64_t length, std::int64_t parts) { return ((length + parts - 1) / parts + 15) / 16 * 16; }

Tiles tiles_of(std::int64_t m, std::int64_t n, std::int64_t k, bool square_grid) {
  if (m * n * k < kSplitWork || std::max(m, n) < 2 * kMinSide) return {m, n};
  if (square_grid && std::min(m, n) >= kSquareSide) {
    const std::int64_t rows = tile_side(m, 4), cols = tile_side(n, 4);
    return {rows, cols, (m + rows - 1) / rows, (n + cols - 1) / cols};
  }
  // oneDNN's blocks of a large square product: 8, not 16 (see the Note).
  const std::int64_t parts = std::min(m, n) >= kSquareSide ? 8 : 16;
  if (m >= n) {
    const std::int64_t rows = std::max(kMinSide, tile_side(m, parts));
    return {rows, n, (m + rows - 1) / rows, 1};
  }
  const std::int64_t cols = std::max(kMinSide, tile_side(n, parts));
  return {m, cols, 1, (n + cols - 1) / cols};
}

// A mapped matrix (or a block of one) as oneDNN's wrapper reads it.
template <class X>
MatrixRef ref_of(const X& x) {
  if constexpr (X::IsRowMajor) return {x.data(), x.rows(), x.cols(), x.outerStride(), x.innerStride()};
  else return {x.data(), x.rows(), x.cols(), x.innerStride(), x.outerStride()};
}

// o (+)= am × bm, tile by tile (Note [Products by fixed tiles]). An unsplit
// product is the one tile [0, m) × [0, n), so each operand layout
// instantiates Eigen's GEMM once. Integer products (rare, and exact whatever
// the split) are not split.
template <bool Accumulate, class O, class A, class B>
void product(O& o, const A& am, const B& bm) {
  using T = typename O::Scalar;
  if constexpr (!std::is_floating_point_v<T>) {
    if constexpr (Accumulate) o.noalias() += am * bm;
    else o.noalias() = am * bm;
  } else {
    const std::int64_t m = am.rows(), n = bm.cols();
    const Tiles t = tiles_of(m, n, am.cols(), !(std::is_same_v<T, float> && onednn_enabled()));
    auto tile = [&](std::int64_t i) {
      const std::int64_t r0 = i / t.across * t.rows, c0 = i % t.across * t.cols;
      const std::int64_t rows = std::min(t.rows, m - r0), cols = std::min(t.cols, n - c0);
      auto out = o.block(r0, c0, rows, cols);
      const auto at = am.middleRows(r0, rows);
      const auto bt = bm.middleCols(c0, cols);
      if constexpr (std::is_same_v<T, float>) {
        if (onednn_product(ref_of(at), ref_of(bt), OutRef{out.data(), rows, cols, out.outerStride()}, Accumulate))
          return;
      }
      if constexpr (Accumulate) out.noalias() += at * bt;
      else out.noalias() = at * bt;
    };
    if (t.count() == 1) {
      tile(0);
      return;
    }
    support::parallel_chunks(t.count(), 1, [&](std::int64_t i, std::int64_t, std::int64_t) { tile(i); });
  }
}

}  // namespace

void CpuEngine::matmul(const TensorView& a, const TensorView& b, const TensorView& out) {
  const int r = out.rank;
  const std::int64_t m = a.shape[r - 2], k = a.shape[r - 1], n = b.shape[r - 1];
  std::int64_t batches = 1;
  for (int i = 0; i < r - 2; ++i) batches *= out.shape[i];
  if (batches == 0 || m == 0 || n == 0) return;  // an empty product has no element (and maybe no data)
  dispatch(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return;  // the ops layer rejects boolean products
    } else {
      auto one = [&](std::int64_t batch) {
        std::int64_t oa = 0, ob = 0, oo = 0;
        for (int i = r - 3; i >= 0; --i) {
          const std::int64_t idx = batch % out.shape[i];
          batch /= out.shape[i];
          oa += idx * a.strides[i];
          ob += idx * b.strides[i];
          oo += idx * out.strides[i];
        }
        OutMat<T> o(static_cast<T*>(out.data) + oo, m, n, Eigen::OuterStride<>(out.strides[r - 2]));
        if (k == 0) {  // a sum of no terms; the empty operands may have no data to offset
          o.setZero();
          return;
        }
        with_matrix(static_cast<const T*>(a.data) + oa, m, k, a.strides[r - 2], a.strides[r - 1], [&](const auto& am) {
          with_matrix(static_cast<const T*>(b.data) + ob, k, n, b.strides[r - 2], b.strides[r - 1],
                      [&](const auto& bm) { product<false>(o, am, bm); });
        });
      };
      // Batches are independent; each runs its own blocks (inline when the
      // batches already share the pool).
      const std::int64_t work = std::max<std::int64_t>(1, m * n * std::max<std::int64_t>(k, 1));
      support::parallel_for(batches, std::max<std::int64_t>(1, kSplitWork / work), [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t batch = lo; batch < hi; ++batch) one(batch);
      });
    }
  });
}

bool CpuEngine::serves_matmul_add(const TensorView& a, const TensorView& b, const TensorView& out) noexcept {
  return out.rank == 2 && a.rank == 2 && b.rank == 2 && is_floating(out.dtype) && out.strides[1] == 1;
}

bool CpuEngine::matmul_add(const TensorView& a, const TensorView& b, const TensorView& out) {
  if (!serves_matmul_add(a, b, out)) return false;
  const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  dispatch(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      OutMat<T> o(static_cast<T*>(out.data), m, n, Eigen::OuterStride<>(n <= 1 ? 1 : out.strides[0]));
      if (k == 0 || m == 0 || n == 0) return;
      with_matrix(static_cast<const T*>(a.data), m, k, a.strides[0], a.strides[1], [&](const auto& am) {
        with_matrix(static_cast<const T*>(b.data), k, n, b.strides[0], b.strides[1],
                    [&](const auto& bm) { product<true>(o, am, bm); });
      });
    }
  });
  return true;
}

}  // namespace ndgc::ops::cpu
