// CPU matrix products: Eigen's blocked GEMM, batched over leading axes.
//
// Each operand matrix is mapped without a copy when either of its last two
// axes has stride 1: row-major with an outer stride, or column-major (a
// transposed view) with an outer stride. Only other layouts are copied.
#include <algorithm>
#include <type_traits>

#include "ops/cpu/cpu_engine.hpp"
#include "ops/cpu/eigen.hpp"
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

// Note [Products by fixed blocks]
// A product of at least kSplitWork multiply-adds is cut into blocks of the
// larger output dimension, up to 16 of them, each one Eigen GEMM on its rows
// (or columns) of the output; the pool runs the blocks. The cut depends on
// m, n and k alone, never on the thread count, so every output element goes
// through the same kernel path (full register tile or remainder) and the
// same k-blocking at every thread count: the same bits. Each block repacks
// the shared operand, which costs k·n (or m·k) against the block's
// (m/16)·k·n multiply-adds.
constexpr std::int64_t kSplitWork = std::int64_t(1) << 22;

struct Blocks {
  bool by_rows = true;
  std::int64_t size = 0, count = 1;
};

Blocks blocks_of(std::int64_t m, std::int64_t n, std::int64_t k) {
  Blocks b;
  const std::int64_t dim = std::max(m, n);
  b.by_rows = m >= n;
  b.size = dim;
  if (m * n * k < kSplitWork || dim < 128) return b;
  b.size = std::max<std::int64_t>(64, ((dim + 15) / 16 + 15) / 16 * 16);
  b.count = (dim + b.size - 1) / b.size;
  return b;
}

// o (+)= am × bm, block by block (Note [Products by fixed blocks]). An
// unsplit product is the one row block [0, m), so each operand layout
// instantiates Eigen's GEMM twice (row and column blocks), not three times.
// Integer products (rare, and exact whatever the split) are not split.
template <bool Accumulate, class O, class A, class B>
void product(O& o, const A& am, const B& bm) {
  using T = typename O::Scalar;
  if constexpr (!std::is_floating_point_v<T>) {
    if constexpr (Accumulate) o.noalias() += am * bm;
    else o.noalias() = am * bm;
  } else {
    const Blocks b = blocks_of(am.rows(), bm.cols(), am.cols());
    auto rows = [&](std::int64_t lo, std::int64_t hi) {
      if constexpr (Accumulate) o.middleRows(lo, hi - lo).noalias() += am.middleRows(lo, hi - lo) * bm;
      else o.middleRows(lo, hi - lo).noalias() = am.middleRows(lo, hi - lo) * bm;
    };
    auto cols = [&](std::int64_t lo, std::int64_t hi) {
      if constexpr (Accumulate) o.middleCols(lo, hi - lo).noalias() += am * bm.middleCols(lo, hi - lo);
      else o.middleCols(lo, hi - lo).noalias() = am * bm.middleCols(lo, hi - lo);
    };
    if (b.count == 1) {
      rows(0, am.rows());
    } else if (b.by_rows) {
      support::parallel_chunks(am.rows(), b.size, [&](std::int64_t, std::int64_t lo, std::int64_t hi) { rows(lo, hi); });
    } else {
      support::parallel_chunks(bm.cols(), b.size, [&](std::int64_t, std::int64_t lo, std::int64_t hi) { cols(lo, hi); });
    }
  }
}

}  // namespace

void CpuEngine::matmul(const TensorView& a, const TensorView& b, const TensorView& out) {
  const int r = out.rank;
  const std::int64_t m = a.shape[r - 2], k = a.shape[r - 1], n = b.shape[r - 1];
  std::int64_t batches = 1;
  for (int i = 0; i < r - 2; ++i) batches *= out.shape[i];
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
        with_matrix(static_cast<const T*>(a.data) + oa, m, k, a.strides[r - 2], a.strides[r - 1], [&](const auto& am) {
          with_matrix(static_cast<const T*>(b.data) + ob, k, n, b.strides[r - 2], b.strides[r - 1],
                      [&](const auto& bm) {
                        if (k == 0) o.setZero();
                        else product<false>(o, am, bm);
                      });
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
      if (k == 0) return;
      with_matrix(static_cast<const T*>(a.data), m, k, a.strides[0], a.strides[1], [&](const auto& am) {
        with_matrix(static_cast<const T*>(b.data), k, n, b.strides[0], b.strides[1],
                    [&](const auto& bm) { product<true>(o, am, bm); });
      });
    }
  });
  return true;
}

}  // namespace ndgc::ops::cpu
