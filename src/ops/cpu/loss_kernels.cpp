// CPU sparse softmax cross-entropy, forward and backward, one pass over the
// logits each (Note [Fused cross-entropy] in ops/activations.cpp).
//
// Rows are contiguous; each row's logsumexp subtracts the row max first so
// exp() stays finite. The forward sums the rows' losses in double and
// divides once; the backward recomputes each row's softmax (one exp per
// element, then one scale by the row's sum) rather than keeping it from the
// forward pass (no array kept on the tape).
#include <cmath>
#include <type_traits>

#include <Eigen/Core>
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ops/cpu/cpu_engine.hpp"
#include "ops/cpu/strided.hpp"

namespace ndgc::ops::cpu {
namespace {

bool served(const TensorView& logits, const TensorView& labels) {
  return logits.rank == 2 && labels.rank == 1 && is_floating(logits.dtype) && logits.is_contiguous() &&
         labels.is_contiguous() && labels.shape[0] == logits.shape[0] && labels.dtype != DataType::boolean;
}

// The class index of row r, checked: integral and inside [0, classes).
template <class L>
std::int64_t label_at(const L* labels, std::int64_t r, std::int64_t classes) {
  const L v = labels[r];
  const std::int64_t k = std::int64_t(v);
  if constexpr (std::is_floating_point_v<L>) {
    if (!(double(v) == double(k)))
      throw InvalidArgument(fmt::format("softmax cross-entropy: label {} at row {} is not a class index", v, r));
  }
  if (k < 0 || k >= classes)
    throw InvalidArgument(
        fmt::format("softmax cross-entropy: label {} at row {} is outside [0, {}) for {} classes", k, r, classes,
                    classes));
  return k;
}

template <class T>
using Row = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <class T>
T log_sum_exp(const Row<T>& x) {
  const T m = x.maxCoeff();
  return m + std::log((x - m).exp().sum());
}

}  // namespace

bool CpuEngine::sparse_softmax_cross_entropy(const TensorView& logits, const TensorView& labels,
                                             const TensorView& loss) {
  if (!served(logits, labels)) return false;
  const std::int64_t rows = logits.shape[0], classes = logits.shape[1];
  dispatch(logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      dispatch(labels.dtype, [&](auto ltag) {
        using L = decltype(ltag);
        if constexpr (!std::is_same_v<L, bool>) {
          const T* x = static_cast<const T*>(logits.data);
          const L* l = static_cast<const L*>(labels.data);
          double total = 0;
          for (std::int64_t r = 0; r < rows; ++r, x += classes) {
            const std::int64_t k = label_at(l, r, classes);
            total += double(log_sum_exp(Row<T>(x, classes)) - x[k]);
          }
          *static_cast<T*>(loss.data) = rows > 0 ? T(total / double(rows)) : T(0);
        }
      });
    }
  });
  return true;
}

bool CpuEngine::sparse_softmax_cross_entropy_backward(const TensorView& logits, const TensorView& labels,
                                                      const TensorView& g, const TensorView& grad) {
  if (!served(logits, labels) || !grad.is_contiguous() || grad.dtype != logits.dtype) return false;
  const std::int64_t rows = logits.shape[0], classes = logits.shape[1];
  dispatch(logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      dispatch(labels.dtype, [&](auto ltag) {
        using L = decltype(ltag);
        if constexpr (!std::is_same_v<L, bool>) {
          const T scale = rows > 0 ? *static_cast<const T*>(g.data) / T(rows) : T(0);
          const T* x = static_cast<const T*>(logits.data);
          T* d = static_cast<T*>(grad.data);
          const L* l = static_cast<const L*>(labels.data);
          for (std::int64_t r = 0; r < rows; ++r, x += classes, d += classes) {
            const std::int64_t k = label_at(l, r, classes);
            Row<T> xr(x, classes);
            Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> dr(d, classes);
            dr = (xr - xr.maxCoeff()).exp();  // one exp per element; the sum then scales the row
            dr *= scale / dr.sum();
            d[k] -= scale;
          }
        }
      });
    }
  });
  return true;
}

}  // namespace ndgc::ops::cpu
