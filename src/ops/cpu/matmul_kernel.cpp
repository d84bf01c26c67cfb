// CPU matrix products: Eigen's blocked GEMM, batched over leading axes.
//
// Each operand matrix is mapped without a copy when either of its last two
// axes has stride 1: row-major with an outer stride, or column-major (a
// transposed view) with an outer stride. Only other layouts are copied.
#include "ops/cpu/cpu_engine.hpp"
#include "ops/cpu/eigen.hpp"
#include "ops/cpu/strided.hpp"

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
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> copy(rows, cols);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) copy(i, j) = data[i * rs + j * cs];
    f(copy);
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
      std::int64_t idx[kMaxRank] = {};
      for (std::int64_t batch = 0; batch < batches; ++batch) {
        std::int64_t oa = 0, ob = 0, oo = 0;
        for (int i = 0; i < r - 2; ++i) {
          oa += idx[i] * a.strides[i];
          ob += idx[i] * b.strides[i];
          oo += idx[i] * out.strides[i];
        }
        OutMat<T> o(static_cast<T*>(out.data) + oo, m, n, Eigen::OuterStride<>(out.strides[r - 2]));
        with_matrix(static_cast<const T*>(a.data) + oa, m, k, a.strides[r - 2], a.strides[r - 1], [&](const auto& am) {
          with_matrix(static_cast<const T*>(b.data) + ob, k, n, b.strides[r - 2], b.strides[r - 1],
                      [&](const auto& bm) {
                        if (k == 0) o.setZero();
                        else o.noalias() = am * bm;
                      });
        });
        for (int i = r - 3; i >= 0; --i) {
          if (++idx[i] < out.shape[i]) break;
          idx[i] = 0;
        }
      }
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
                    [&](const auto& bm) { o.noalias() += am * bm; });
      });
    }
  });
  return true;
}

}  // namespace ndgc::ops::cpu
