// CPU sparse softmax cross-entropy, forward and backward, one pass over the
// logits each (Note [Fused cross-entropy] in ops/activations.cpp).
//
// Each row's max is subtracted first so exp() stays finite. The forward sums
// the rows' losses in double and divides once; the backward recomputes each
// row's softmax rather than keeping it from the forward pass (no array kept
// on the tape). See Note [Exponentials by the block].
#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ops/cpu/cpu_engine.hpp"
#include "ops/cpu/eigen.hpp"
#include "ops/cpu/strided.hpp"
#include "support/parallel.hpp"

namespace ndgc::ops::cpu {
namespace {

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

// Note [Exponentials by the block]
// A classifier's rows are short (10 classes in the MLP of perf/): exp() over
// one row at a time runs one vector and then the tail element by element
// through libm, which cost most of the loss's instructions. So both kernels
// write the shifted logits (x - row max) of many rows into one buffer and
// take exp() of the whole buffer in one vectorised Eigen expression. The
// buffer is 64-byte aligned and its length padded to a multiple of 16, so
// every element goes through Eigen's vector exp: results then depend on the
// values only, never on where the logits or the stack happen to lie (the
// vector exp and libm's differ in the last bit, and a buffer whose start or
// length varied would mix them differently from run to run).
constexpr std::int64_t kChunk = 1024, kPad = 16;

template <class T>
using Block = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>, Eigen::Aligned64>;

template <class T>
T row_sum(const T* d, std::int64_t classes) {
  T s = 0;
  for (std::int64_t j = 0; j < classes; ++j) s += d[j];
  return s;
}

// Calls f(first_row, rows, e, max) for consecutive chunks of the rows of x
// ([rows, classes], classes > 0): e holds exp(x - row max) of those rows,
// max[i] the max of the chunk's row i.
template <class T, class F>
void for_each_exp_chunk(const T* x, std::int64_t rows, std::int64_t classes, F&& f) {
  const std::int64_t per = std::max<std::int64_t>(1, kChunk / classes);
  const std::int64_t cap = (per * classes + kPad - 1) / kPad * kPad;
  alignas(64) T stack[kChunk];
  T max[kChunk];
  std::vector<T> heap;  // a row longer than kChunk: a 64-byte-aligned buffer in here
  T* buf = stack;
  if (cap > kChunk) {
    heap.resize(std::size_t(cap + 64 / sizeof(T)));
    void* p = heap.data();
    std::size_t space = heap.size() * sizeof(T);
    buf = static_cast<T*>(std::align(64, std::size_t(cap) * sizeof(T), p, space));
  }
  for (std::int64_t r0 = 0; r0 < rows; r0 += per) {
    const std::int64_t n = std::min(per, rows - r0);
    const T* xr = x + r0 * classes;
    T* d = buf;
    for (std::int64_t r = 0; r < n; ++r, xr += classes, d += classes) {
      T m = xr[0];
      for (std::int64_t j = 1; j < classes; ++j) m = std::max(m, xr[j]);
      for (std::int64_t j = 0; j < classes; ++j) d[j] = xr[j] - m;
      max[r] = m;
    }
    const std::int64_t len = (n * classes + kPad - 1) / kPad * kPad;
    std::fill(buf + n * classes, buf + len, T(0));
    Block<T> b(buf, len);
    b = b.exp();
    f(r0, n, static_cast<const T*>(buf), static_cast<const T*>(max));
  }
}

// Rows per piece of work for the pool: about kGrainSize logits.
std::int64_t rows_per_chunk(std::int64_t classes) {
  return std::max<std::int64_t>(1, support::kGrainSize / std::max<std::int64_t>(1, classes));
}

}  // namespace

bool CpuEngine::serves_cross_entropy(const TensorView& logits, const TensorView& labels) noexcept {
  return logits.rank == 2 && labels.rank == 1 && is_floating(logits.dtype) && logits.is_contiguous() &&
         labels.is_contiguous() && labels.shape[0] == logits.shape[0] && labels.dtype != DataType::boolean;
}

bool CpuEngine::serves_cross_entropy_backward(const TensorView& logits, const TensorView& labels,
                                              const TensorView& grad) noexcept {
  return serves_cross_entropy(logits, labels) && grad.is_contiguous() && grad.dtype == logits.dtype;
}

bool CpuEngine::sparse_softmax_cross_entropy(const TensorView& logits, const TensorView& labels,
                                             const TensorView& loss) {
  if (!serves_cross_entropy(logits, labels)) return false;
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
          if (classes > 0) {
            // Fixed chunks of rows, their partial sums added in order: the
            // same bits at any thread count (support/parallel.hpp).
            total = support::parallel_reduce(
                rows, rows_per_chunk(classes), 0.0,
                [&](std::int64_t lo, std::int64_t hi) {
                  double part = 0;
                  for_each_exp_chunk(x + lo * classes, hi - lo, classes,
                                     [&](std::int64_t r0, std::int64_t n, const T* e, const T* max) {
                                       for (std::int64_t r = 0; r < n; ++r, e += classes) {
                                         // -log softmax(row)[k] = log(sum of exp(row - max)) - (row[k] - max)
                                         const std::int64_t row_index = lo + r0 + r;
                                         const T* row = x + row_index * classes;
                                         const std::int64_t k = label_at(l, row_index, classes);
                                         part += double(std::log(row_sum(e, classes))) - double(row[k] - max[r]);
                                       }
                                     });
                  return part;
                },
                [](double a, double b) { return a + b; });
          } else if (rows > 0) {
            label_at(l, 0, classes);  // no class can be a label: the error names row 0
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
  if (!serves_cross_entropy_backward(logits, labels, grad)) return false;
  const std::int64_t rows = logits.shape[0], classes = logits.shape[1];
  dispatch(logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      dispatch(labels.dtype, [&](auto ltag) {
        using L = decltype(ltag);
        if constexpr (!std::is_same_v<L, bool>) {
          const T scale = rows > 0 ? *static_cast<const T*>(g.data) / T(rows) : T(0);
          const T* x = static_cast<const T*>(logits.data);
          const L* l = static_cast<const L*>(labels.data);
          for (std::int64_t r = 0; r < rows; ++r) label_at(l, r, classes);  // every label checked before writing
          if (classes > 0)
            support::parallel_chunks(rows, rows_per_chunk(classes), [&](std::int64_t, std::int64_t lo, std::int64_t hi) {
              for_each_exp_chunk(x + lo * classes, hi - lo, classes,
                                 [&](std::int64_t r0, std::int64_t n, const T* e, const T*) {
                                   T* d = static_cast<T*>(grad.data) + (lo + r0) * classes;
                                   for (std::int64_t r = 0; r < n; ++r, e += classes, d += classes) {
                                     const T k = scale / row_sum(e, classes);
                                     for (std::int64_t j = 0; j < classes; ++j) d[j] = e[j] * k;
                                     d[label_at(l, lo + r0 + r, classes)] -= scale;
                                   }
                                 });
            });
        }
      });
    }
  });
  return true;
}

}  // namespace ndgc::ops::cpu
