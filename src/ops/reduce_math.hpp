// How the CUDA reductions combine values and partial results, written once
// for the kernels (gpu/reduce_kernels.cu) and the host tests
// (tests/ops/reduce_math_test.cpp), which check that cutting a row into
// chunks (Note [Split rows] in ops/index_math.hpp) gives what one pass over
// it gives. The semantics are the CPU engine's (ops/cpu/reduce_kernels.cpp):
// signed integer sums wrap, integer means divide in the integer type, max and
// min propagate NaN, arg max/min return the first best index, a NaN first.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ops/engine.hpp"
#include "ops/host_device.hpp"

namespace ndgc::ops::reduce_math {

// A partial result: `has` false while nothing was seen.
template <class T>
struct Slot {
  T value;
  std::int64_t index;  // arg max/min: the column of `value`
  bool has;
};

template <class T>
NDGC_HD bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

template <class T>
NDGC_HD T combine(Reduce op, T a, T b) {
  switch (op) {
    case Reduce::sum:
    case Reduce::mean:
      if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        using U = std::make_unsigned_t<T>;
        return T(U(a) + U(b));  // wraps, as the CPU's WrappingSum
      } else {
        return T(a + b);
      }
    case Reduce::max: return is_nan(a) ? a : is_nan(b) ? b : (a > b ? a : b);
    case Reduce::min: return is_nan(a) ? a : is_nan(b) ? b : (a < b ? a : b);
  }
  return a;
}

// Two partials of a sum, mean, max or min.
template <class T>
NDGC_HD Slot<T> merge(Reduce op, Slot<T> a, Slot<T> b) {
  if (!a.has) return b;
  if (!b.has) return a;
  return Slot<T>{combine(op, a.value, b.value), 0, true};
}

// The result of a row of `cols` columns from its total.
template <class T>
NDGC_HD T finish(Reduce op, Slot<T> total, std::int64_t cols) {
  return op == Reduce::mean ? T(total.value / T(cols)) : total.value;
}

// Arg max/min: the better of two candidates; ties and NaN go to the smaller
// index (NumPy: the first NaN, else the first best).
template <class T>
NDGC_HD Slot<T> better(bool max, Slot<T> a, Slot<T> b) {
  if (!a.has) return b;
  if (!b.has) return a;
  const bool an = is_nan(a.value), bn = is_nan(b.value);
  if (an || bn) return (an && bn) ? (a.index < b.index ? a : b) : (an ? a : b);
  if (a.value == b.value) return a.index < b.index ? a : b;
  return (max ? a.value > b.value : a.value < b.value) ? a : b;
}

// What a reduction computes: a value (sum, mean, max, min), or with `arg` the
// first best index (of the max, or of the min). A row's result is its
// columns' Slot{x, column, true} joined in any grouping, then result().
struct Reduction {
  Reduce op = Reduce::sum;
  bool arg = false;
  bool max = false;  // arg max, else arg min

  template <class T>
  NDGC_HD Slot<T> join(Slot<T> a, Slot<T> b) const {
    return arg ? better(max, a, b) : merge(op, a, b);
  }
  template <class Out, class T>
  NDGC_HD Out result(Slot<T> total, std::int64_t cols) const {
    return arg ? Out(total.has ? total.index : 0) : Out(finish(op, total, cols));
  }
};

}  // namespace ndgc::ops::reduce_math
