// CPU reductions: reduce over any axes, arg max/min along one axis, softmax.
//
// Each moves the reduced axes last (a free permutation of the view), makes
// the input contiguous if it is not (one copy), and then works on a row-major
// rows × cols matrix with Eigen's rowwise reductions. Reducing the leading
// axes of a contiguous array (a bias gradient: sum over the batch) skips the
// copy and uses a colwise reduction instead. max and min propagate NaN; see
// Note [NaN in max and min].
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "ops/cpu/cpu_engine.hpp"
#include "ops/cpu/eigen.hpp"
#include "ops/cpu/strided.hpp"
#include "support/parallel.hpp"

namespace ndgc::ops::cpu {
namespace {

template <class T>
using RowMat = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
template <class T>
using OutVec = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>;

struct Split {
  int perm[kMaxRank];
  int kept = 0;  // perm[0, kept) are kept axes, the rest reduced
  std::int64_t rows = 1, cols = 1;
  bool reduced_prefix = true;  // every reduced axis comes before every kept axis
};

// Note [Reduced on both sides]
// Reducing every axis but a middle run (a conv's bias gradient: [N, C, H, W]
// over {0, 2, 3}; batch statistics) would permute the input into rows and
// copy all of it. For a contiguous floating input seen as [P, K, S] (P the
// leading reduced axes, K the kept run, S the trailing reduced ones), the
// rows of [P·K, S] are reduced in place into a [P, K] scratch, whose columns
// then reduce into the K outputs: no copy, and a fixed order (the same bits
// at any thread count). A mean sums both ways and divides once. Floating
// inputs only (the ops layer has converted integer means to float32 by
// then); integer sums, maxima and minima keep the copy.
struct BothSides {
  std::int64_t prefix = 1, kept = 1, suffix = 1;
  bool ok = true;
};

BothSides both_sides(const TensorView& in, std::uint32_t axes) {
  BothSides b;
  int phase = 0;  // 0: leading reduced axes, 1: kept axes, 2: trailing reduced axes
  for (int i = 0; i < in.rank; ++i) {
    if (in.shape[i] == 1) continue;
    const bool reduced = axes >> i & 1;
    if (reduced) {
      if (phase == 1) phase = 2;
      (phase == 0 ? b.prefix : b.suffix) *= in.shape[i];
    } else {
      if (phase == 2) b.ok = false;
      phase = 1;
      b.kept *= in.shape[i];
    }
  }
  return b;
}

Split split_axes(const TensorView& in, std::uint32_t axes) {
  Split s;
  int n = 0;
  bool seen_kept = false;
  for (int i = 0; i < in.rank; ++i)
    if (!(axes >> i & 1)) {
      s.perm[n++] = i;
      s.rows *= in.shape[i];
      seen_kept = true;
    } else if (seen_kept && in.shape[i] != 1) {
      s.reduced_prefix = false;
    }
  s.kept = n;
  for (int i = 0; i < in.rank; ++i)
    if (axes >> i & 1) {
      s.perm[n++] = i;
      s.cols *= in.shape[i];
    }
  return s;
}

// Note [NaN in max and min]
// Eigen's maxCoeff/minCoeff may drop NaN (PropagateFast); NumPy's max and min,
// and our element-wise maximum/minimum, return NaN when any element is NaN.
// The partial reductions therefore use Eigen's NaN-propagating functors.
template <class T>
using MaxOp = Eigen::internal::scalar_max_op<T, T, Eigen::PropagateNaN>;
template <class T>
using MinOp = Eigen::internal::scalar_min_op<T, T, Eigen::PropagateNaN>;

// Sums of signed integers wrap around (two's complement), as NumPy's do for
// a fixed dtype: Eigen's sum would overflow a signed type, which is undefined
// behaviour (found by tests/fuzz/idx_reader_fuzz.cpp under UBSan).
template <class T>
struct WrappingSum {
  T operator()(const T& a, const T& b) const noexcept {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  }
};
template <class T>
constexpr bool kWraps = std::is_integral_v<T> && std::is_signed_v<T>;

// One row or column reduced by Eigen (`v` a vector expression).
template <class T, class V>
T reduce_vector(Reduce op, const V& v) {
  if constexpr (kWraps<T>) {
    if (op == Reduce::sum || op == Reduce::mean) return v.redux(WrappingSum<T>());
  }
  switch (op) {
    case Reduce::sum:
    case Reduce::mean: return v.sum();
    case Reduce::max: return v.redux(MaxOp<T>());
    case Reduce::min: return v.redux(MinOp<T>());
  }
  return T(0);
}

template <class T>
T combine(Reduce op, T a, T b) {
  if constexpr (kWraps<T>) {
    if (op == Reduce::sum || op == Reduce::mean) return WrappingSum<T>()(a, b);
  }
  switch (op) {
    case Reduce::sum:
    case Reduce::mean: return a + b;
    case Reduce::max: return MaxOp<T>()(a, b);
    case Reduce::min: return MinOp<T>()(a, b);
  }
  return a;
}

// Note [Reductions by fixed chunks]
// Work above the grain is split where the shape alone says: whole rows (a
// row's reduction does not depend on its neighbours), blocks of columns, or,
// for a row longer than the grain, chunks of kGrainSize elements whose
// partials combine in chunk order. Nothing depends on the thread count, so
// a sum is the same bits on 1 thread or 7 (support/parallel.hpp).
template <class T>
void reduce_rows(Reduce op, const RowMat<T>& m, T* out) {
  const std::int64_t rows = m.rows(), cols = m.cols();
  if (cols > support::kGrainSize) {
    for (std::int64_t r = 0; r < rows; ++r) {
      const T total = support::parallel_reduce(
          cols, support::kGrainSize, T(0),
          [&](std::int64_t lo, std::int64_t hi) { return reduce_vector<T>(op, m.row(r).segment(lo, hi - lo)); },
          [&](T a, T b) { return combine(op, a, b); });
      out[r] = op == Reduce::mean ? T(total / T(cols)) : total;
    }
    return;
  }
  support::parallel_for(rows, std::max<std::int64_t>(1, support::kGrainSize / std::max<std::int64_t>(1, cols)),
                        [&](std::int64_t lo, std::int64_t hi) {
                          for (std::int64_t r = lo; r < hi; ++r) {
                            const T v = reduce_vector<T>(op, m.row(r));
                            out[r] = op == Reduce::mean ? T(v / T(cols)) : v;
                          }
                        });
}

template <class T>
void reduce_cols(Reduce op, const RowMat<T>& m, T* out) {
  const std::int64_t rows = m.rows(), cols = m.cols();
  auto block = [&](std::int64_t lo, std::int64_t hi) {
    auto sub = m.middleCols(lo, hi - lo);
    OutVec<T> o(out + lo, hi - lo);
    if constexpr (kWraps<T>) {
      if (op == Reduce::sum || op == Reduce::mean) {
        o = sub.colwise().redux(WrappingSum<T>()).transpose();
        if (op == Reduce::mean) o /= T(rows);
        return;
      }
    }
    switch (op) {
      case Reduce::sum: o = sub.colwise().sum().transpose(); break;
      case Reduce::mean: o = sub.colwise().sum().transpose() / T(rows); break;
      case Reduce::max: o = sub.colwise().redux(MaxOp<T>()).transpose(); break;
      case Reduce::min: o = sub.colwise().redux(MinOp<T>()).transpose(); break;
    }
  };
  if (rows * cols <= support::kGrainSize) {
    block(0, cols);
    return;
  }
  // Blocks of whole vectors' worth of columns (See Note [Reductions by fixed chunks]).
  const std::int64_t width = std::max<std::int64_t>(16, support::kGrainSize / rows / 16 * 16);
  support::parallel_chunks(cols, width, [&](std::int64_t, std::int64_t lo, std::int64_t hi) { block(lo, hi); });
}

// x is "better" than the current best: larger (smaller), or NaN, which wins
// as in NumPy's argmax/argmin. See Note [NaN in max and min].
template <class T>
bool beats(bool max, T x, T best) noexcept {
  if constexpr (std::is_floating_point_v<T>) {
    if (best != best) return false;  // the first NaN stays
    if (x != x) return true;
  }
  return max ? x > best : x < best;
}

}  // namespace

void CpuEngine::reduce(Reduce op, const TensorView& in, std::uint32_t axes, const TensorView& out) {
  Split s = split_axes(in, axes);
  dispatch(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return;  // the ops layer converts booleans first
    } else {
      T* o = static_cast<T*>(out.data);  // a fresh contiguous array: kept axes in order
      if (s.cols == 0) {
        fill(out, op == Reduce::sum ? 0.0 : std::numeric_limits<double>::quiet_NaN());
        return;
      }
      if (in.is_contiguous() && s.reduced_prefix) {
        reduce_cols<T>(op, RowMat<T>(static_cast<const T*>(in.data), s.cols, s.rows), o);
        return;
      }
      if constexpr (std::is_floating_point_v<T>) {
        const BothSides b = both_sides(in, axes);  // Note [Reduced on both sides]
        if (in.is_contiguous() && b.ok && b.prefix > 1 && b.suffix > 1) {
          const Scratch partial(contiguous_view(nullptr, in.dtype, Shape{b.prefix, b.kept}));
          T* p = static_cast<T*>(partial.view().data);
          // Dividing once, as a one-pass mean does: (total / S) / P can
          // differ from total / (P·S) in the last bit.
          const Reduce pass = op == Reduce::mean ? Reduce::sum : op;
          reduce_rows<T>(pass, RowMat<T>(static_cast<const T*>(in.data), b.prefix * b.kept, b.suffix), p);
          reduce_cols<T>(pass, RowMat<T>(p, b.prefix, b.kept), o);
          if (op == Reduce::mean)
            for (std::int64_t k = 0; k < b.kept; ++k) o[k] = T(o[k] / T(b.prefix * b.suffix));
          return;
        }
      }
      std::optional<Scratch> scratch;
      const TensorView permuted = in.permuted(s.perm);  // outlives `rows`, which may refer to it
      const TensorView& rows = contiguous_or_copy(permuted, scratch);
      reduce_rows<T>(op, RowMat<T>(static_cast<const T*>(rows.data), s.rows, s.cols), o);
    }
  });
}

void CpuEngine::arg_reduce(bool max, const TensorView& in, int axis, const TensorView& out) {
  Split s = split_axes(in, 1u << axis);
  std::optional<Scratch> scratch;
  const TensorView permuted = in.permuted(s.perm);  // outlives `rows`, which may refer to it
  const TensorView& rows = contiguous_or_copy(permuted, scratch);
  std::int64_t* o = static_cast<std::int64_t*>(out.data);
  dispatch(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* base = static_cast<const T*>(rows.data);
    support::parallel_for(s.rows, std::max<std::int64_t>(1, support::kGrainSize / std::max<std::int64_t>(1, s.cols)),
                          [&](std::int64_t lo, std::int64_t hi) {
                            for (std::int64_t r = lo; r < hi; ++r) {
                              const T* x = base + r * s.cols;
                              std::int64_t best = 0;
                              for (std::int64_t c = 1; c < s.cols; ++c)
                                if (beats(max, x[c], x[best])) best = c;
                              o[r] = best;
                            }
                          });
  });
}

void CpuEngine::softmax(const TensorView& in, int axis, bool log, const TensorView& out) {
  Split s = split_axes(in, 1u << axis);
  std::optional<Scratch> in_scratch;
  const TensorView permuted = in.permuted(s.perm);  // outlives `rows`, which may refer to it
  const TensorView& rows = contiguous_or_copy(permuted, in_scratch);
  TensorView out_rows = out.permuted(s.perm);
  std::optional<Scratch> out_scratch;
  if (!out_rows.is_contiguous()) out_scratch.emplace(out_rows);
  const TensorView& target = out_scratch ? out_scratch->view() : out_rows;
  dispatch(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      using Mat = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      Eigen::Map<const Mat> x(static_cast<const T*>(rows.data), s.rows, s.cols);
      Eigen::Map<Mat> y(static_cast<T*>(target.data), s.rows, s.cols);
      // Subtracting the row max keeps exp() finite. Row by row: whole-matrix
      // rowwise() reductions would allocate two temporary columns per call.
      // Rows are independent, so the pool may take them in any pieces.
      if (s.cols == 0) return;
      support::parallel_for(s.rows, std::max<std::int64_t>(1, support::kGrainSize / s.cols),
                            [&](std::int64_t lo, std::int64_t hi) {
                              for (Eigen::Index r = lo; r < hi; ++r) {
                                auto xr = x.row(r);
                                auto yr = y.row(r);
                                yr = xr - xr.maxCoeff();
                                if (log) {
                                  yr -= std::log(yr.exp().sum());
                                } else {
                                  yr = yr.exp();
                                  yr /= yr.sum();
                                }
                              }
                            });
    }
  });
  if (out_scratch) copy(target, out_rows);
}

}  // namespace ndgc::ops::cpu
