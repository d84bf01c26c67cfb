// CPU element-wise kernels: unary, binary (array and scalar operands), where.
//
// Integer arithmetic wraps (computed in the unsigned type: no undefined
// behaviour on overflow); integer division by zero throws InvalidArgument
// instead of raising SIGFPE.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ops/cpu/cpu_engine.hpp"
#include "ops/cpu/eigen.hpp"
#include "ops/cpu/half_convert.hpp"
#include "ops/cpu/strided.hpp"

namespace ndgc::ops::cpu {
namespace {

template <class T>
using Vec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using CVec = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <class T>
using Wide = std::make_unsigned_t<std::conditional_t<std::is_same_v<T, bool>, unsigned char, T>>;

template <class T>
T ipow(T base, T exp) noexcept {
  if (exp < 0) return base == 1 ? T(1) : base == T(-1) ? (exp % 2 ? T(-1) : T(1)) : T(0);
  Wide<T> result = 1, b = Wide<T>(base);
  for (auto e = Wide<T>(exp); e; e >>= 1) {
    if (e & 1) result *= b;
    b *= b;
  }
  return T(result);
}

template <class T>
T scalar_binary(Binary op, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case Binary::add: return a + b;
      case Binary::sub: return a - b;
      case Binary::mul: return a * b;
      case Binary::div: return a / b;
      case Binary::pow: return std::pow(a, b);
      case Binary::maximum: return a > b || a != a ? a : b;
      case Binary::minimum: return a < b || a != a ? a : b;
      default: break;
    }
  } else {
    using U = Wide<T>;
    switch (op) {
      case Binary::add: return T(U(a) + U(b));
      case Binary::sub: return T(U(a) - U(b));
      case Binary::mul: return T(U(a) * U(b));
      case Binary::div:
        if (b == 0) throw InvalidArgument("div: integer division by zero");
        if constexpr (std::is_signed_v<T>)
          if (b == T(-1)) return T(U(0) - U(a));  // INT_MIN / -1 wraps instead of trapping
        return T(a / b);
      case Binary::pow: return ipow(a, b);
      case Binary::maximum: return a > b ? a : b;
      case Binary::minimum: return a < b ? a : b;
      default: break;
    }
  }
  return T(0);
}

template <class T>
bool scalar_compare(Binary op, T a, T b) noexcept {
  switch (op) {
    case Binary::eq: return a == b;
    case Binary::ne: return a != b;
    case Binary::gt: return a > b;
    case Binary::ge: return a >= b;
    case Binary::lt: return a < b;
    case Binary::le: return a <= b;
    default: return false;
  }
}

template <class T>
T scalar_unary(Unary op, T x) noexcept {
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case Unary::neg: return -x;
      case Unary::abs: return std::abs(x);
      case Unary::exp: return std::exp(x);
      case Unary::log: return std::log(x);
      case Unary::sqrt: return std::sqrt(x);
      case Unary::square: return x * x;
      case Unary::relu: return x > T(0) ? x : T(0);
      case Unary::sigmoid: return T(1) / (T(1) + std::exp(-x));
      case Unary::tanh: return std::tanh(x);
      case Unary::floor: return std::floor(x);
      case Unary::ceil: return std::ceil(x);
      case Unary::round: return std::nearbyint(x);  // half to even in the default rounding mode
      case Unary::sin: return std::sin(x);
      case Unary::cos: return std::cos(x);
      case Unary::tan: return std::tan(x);
      case Unary::asin: return std::asin(x);
      case Unary::acos: return std::acos(x);
      case Unary::atan: return std::atan(x);
      case Unary::sinh: return std::sinh(x);
      case Unary::cosh: return std::cosh(x);
      case Unary::asinh: return std::asinh(x);
      case Unary::acosh: return std::acosh(x);
      case Unary::atanh: return std::atanh(x);
      case Unary::erf: return std::erf(x);
    }
  } else {
    using U = Wide<T>;
    switch (op) {
      case Unary::neg: return T(U(0) - U(x));
      case Unary::abs: return x < T(0) ? T(U(0) - U(x)) : x;
      case Unary::square: return T(U(x) * U(x));
      case Unary::relu: return x > T(0) ? x : T(0);
      default: break;  // the ops layer allows only the four above on integers
    }
  }
  return x;
}

// Contiguous float rows through Eigen: out = a op b, where a, b are array
// expressions (maps or constants).
template <class T, class A, class B>
bool eigen_binary(Binary op, const A& a, const B& b, void* out, std::int64_t n) {
  if (is_comparison(op)) {
    Vec<bool> o(static_cast<bool*>(out), n);
    switch (op) {
      case Binary::eq: o = a == b; return true;
      case Binary::ne: o = a != b; return true;
      case Binary::gt: o = a > b; return true;
      case Binary::ge: o = a >= b; return true;
      case Binary::lt: o = a < b; return true;
      case Binary::le: o = a <= b; return true;
      default: return false;
    }
  }
  Vec<T> o(static_cast<T*>(out), n);
  switch (op) {
    case Binary::add: o = a + b; return true;
    case Binary::sub: o = a - b; return true;
    case Binary::mul: o = a * b; return true;
    case Binary::div: o = a / b; return true;
    case Binary::pow: o = a.pow(b); return true;
    default: return false;  // maximum/minimum: the loop keeps NaN semantics exact
  }
}

template <class T>
void binary_typed(Binary op, const TensorView& a, const TensorView& b, const TensorView& out) {
  const bool cmp = is_comparison(op);
  parallel_for_each_row<3>({&a, &b, &out}, [&](auto& p, auto& s, std::int64_t n) {
    const T* pa = reinterpret_cast<const T*>(p[0]);
    const T* pb = reinterpret_cast<const T*>(p[1]);
    if constexpr (std::is_floating_point_v<T>) {
      if (s[2] == 1 && n >= 8) {
        using C = Eigen::Array<T, Eigen::Dynamic, 1>;
        // x ^ 2 (a layer norm's variance written out, as PyTorch's exports
        // do): the product, the correctly rounded square that std::pow gives
        // on the element loop, instead of Eigen's pow (13 % of a
        // TransformerEncoder's forward pass).
        if (op == Binary::pow && s[0] == 1 && s[1] == 0 && *pb == T(2)) {
          Vec<T>(reinterpret_cast<T*>(p[2]), n) = CVec<T>(pa, n).square();
          return;
        }
        if (s[0] == 1 && s[1] == 1 && eigen_binary<T>(op, CVec<T>(pa, n), CVec<T>(pb, n), p[2], n)) return;
        if (s[0] == 1 && s[1] == 0 && eigen_binary<T>(op, CVec<T>(pa, n), C::Constant(n, *pb), p[2], n)) return;
        if (s[0] == 0 && s[1] == 1 && eigen_binary<T>(op, C::Constant(n, *pa), CVec<T>(pb, n), p[2], n)) return;
      }
    }
    if (cmp) {
      bool* o = reinterpret_cast<bool*>(p[2]);
      for (std::int64_t i = 0; i < n; ++i) o[i * s[2]] = scalar_compare(op, pa[i * s[0]], pb[i * s[1]]);
    } else {
      T* o = reinterpret_cast<T*>(p[2]);
      for (std::int64_t i = 0; i < n; ++i) o[i * s[2]] = scalar_binary(op, pa[i * s[0]], pb[i * s[1]]);
    }
  });
}

template <class T>
bool eigen_unary(Unary op, const T* in, T* out, std::int64_t n) {
  CVec<T> x(in, n);
  Vec<T> o(out, n);
  switch (op) {
    case Unary::neg: o = -x; return true;
    case Unary::abs: o = x.abs(); return true;
    case Unary::exp: o = x.exp(); return true;
    case Unary::log: o = x.log(); return true;
    case Unary::sqrt: o = x.sqrt(); return true;
    case Unary::square: o = x.square(); return true;
    case Unary::relu: o = x.max(T(0)); return true;
    case Unary::sigmoid: o = x.logistic(); return true;
    case Unary::tanh: o = x.tanh(); return true;
    default: return false;  // the element loop: std's functions
  }
  return false;
}

template <class T>
void unary_typed(Unary op, const TensorView& in, const TensorView& out) {
  parallel_for_each_row<2>({&out, &in}, [&](auto& p, auto& s, std::int64_t n) {
    T* o = reinterpret_cast<T*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    if constexpr (std::is_floating_point_v<T>) {
      if (s[0] == 1 && s[1] == 1 && eigen_unary(op, x, o, n)) return;
    }
    for (std::int64_t i = 0; i < n; ++i) o[i * s[0]] = scalar_unary(op, x[i * s[1]]);
  });
}

// memcpy and memset of contiguous arrays (gradients zeroed every step,
// contiguous copies) in chunks of four grains: a byte copy needs much more
// work than an arithmetic op to pay for a hand-off. Bytes are bytes, so any
// split gives the same result.
template <class F>
void by_bulk_chunks(std::int64_t n, F&& f) {
  support::parallel_chunks(n, 4 * support::kGrainSize,
                           [&](std::int64_t, std::int64_t lo, std::int64_t hi) { f(lo, hi); });
}

}  // namespace

void CpuEngine::binary(Binary op, const TensorView& a, const TensorView& b, const TensorView& out) {
  dispatch(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      // Booleans only compare (the ops layer rejects arithmetic on them).
      parallel_for_each_row<3>({&a, &b, &out}, [&](auto& p, auto& s, std::int64_t n) {
        const bool* pa = reinterpret_cast<const bool*>(p[0]);
        const bool* pb = reinterpret_cast<const bool*>(p[1]);
        bool* o = reinterpret_cast<bool*>(p[2]);
        for (std::int64_t i = 0; i < n; ++i)
          o[i * s[2]] = is_comparison(op) ? scalar_compare(op, pa[i * s[0]], pb[i * s[1]])
                        : op == Binary::maximum ? (pa[i * s[0]] || pb[i * s[1]])
                                                : (pa[i * s[0]] && pb[i * s[1]]);
      });
    } else {
      binary_typed<T>(op, a, b, out);
    }
  });
}

void CpuEngine::binary_scalar(Binary op, const TensorView& a, double s, bool scalar_left, const TensorView& out) {
  // The scalar becomes a broadcast view of one element.
  dispatch(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    T value = convert<T>(s);
    TensorView sv = a;
    sv.data = &value;
    for (int i = 0; i < sv.rank; ++i) sv.strides[i] = 0;
    if (scalar_left) binary(op, sv, a, out);
    else binary(op, a, sv, out);
  });
}

void CpuEngine::unary(Unary op, const TensorView& in, const TensorView& out) {
  dispatch(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) unary_typed<T>(op, in, out);
    else throw DTypeMismatch(fmt::format("{}: boolean arrays have no {}", name_of(op), name_of(op)));
  });
}

void CpuEngine::where(const TensorView& condition, const TensorView& a, const TensorView& b,
                      const TensorView& out) {
  dispatch(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    parallel_for_each_row<4>({&out, &condition, &a, &b}, [&](auto& p, auto& s, std::int64_t n) {
      T* o = reinterpret_cast<T*>(p[0]);
      const bool* c = reinterpret_cast<const bool*>(p[1]);
      const T* x = reinterpret_cast<const T*>(p[2]);
      const T* y = reinterpret_cast<const T*>(p[3]);
      // Contiguous rows (a broadcast scalar on either side allowed): loops
      // without stride arithmetic, which the compiler vectorises.
      if (s[0] == 1 && s[1] == 1) {
        if (s[2] == 1 && s[3] == 1) {
          for (std::int64_t i = 0; i < n; ++i) o[i] = c[i] ? x[i] : y[i];
          return;
        }
        if (s[2] == 1 && s[3] == 0) {
          const T yv = *y;
          for (std::int64_t i = 0; i < n; ++i) o[i] = c[i] ? x[i] : yv;
          return;
        }
        if (s[2] == 0 && s[3] == 1) {
          const T xv = *x;
          for (std::int64_t i = 0; i < n; ++i) o[i] = c[i] ? xv : y[i];
          return;
        }
      }
      for (std::int64_t i = 0; i < n; ++i) o[i * s[0]] = c[i * s[1]] ? x[i * s[2]] : y[i * s[3]];
    });
  });
}

bool CpuEngine::serves_relu_backward(const TensorView& x, const TensorView& g, const TensorView& out) noexcept {
  return is_floating(out.dtype) && x.dtype == out.dtype && g.dtype == out.dtype;
}

bool CpuEngine::relu_backward(const TensorView& x, const TensorView& g, const TensorView& out) {
  if (!serves_relu_backward(x, g, out)) return false;
  dispatch(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      parallel_for_each_row<3>({&out, &x, &g}, [&](auto& p, auto& s, std::int64_t n) {
        T* o = reinterpret_cast<T*>(p[0]);
        const T* px = reinterpret_cast<const T*>(p[1]);
        const T* pg = reinterpret_cast<const T*>(p[2]);
        if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
          // Eigen 3.4's select() is a scalar loop with a branch per element,
          // which mispredicts on about half of a ReLU's inputs; both loads
          // first let `omp simd` make it a vector blend (this file is built
          // with -fopenmp-simd).
#pragma omp simd
          for (std::int64_t i = 0; i < n; ++i) {
            const T xv = px[i], gv = pg[i];
            o[i] = xv > T(0) ? gv : T(0);
          }
          return;
        }
        for (std::int64_t i = 0; i < n; ++i) o[i * s[0]] = px[i * s[1]] > T(0) ? pg[i * s[2]] : T(0);
      });
    }
  });
  return true;
}

void CpuEngine::copy(const TensorView& in, const TensorView& out) {
  if (in.dtype == out.dtype && in.is_contiguous() && out.is_contiguous()) {
    // An empty array may have no buffer at all, and memcpy's pointers must not be null even for 0 bytes.
    if (in.data != out.data && in.size() > 0) {
      const std::size_t esize = size_of(in.dtype);
      by_bulk_chunks(in.size(), [&](std::int64_t lo, std::int64_t hi) {
        std::memcpy(static_cast<char*>(out.data) + std::size_t(lo) * esize,
                    static_cast<const char*>(in.data) + std::size_t(lo) * esize, std::size_t(hi - lo) * esize);
      });
    }
    return;
  }
  if (copy_half_rows(in, out)) return;
  dispatch_storage(in.dtype, [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch_storage(out.dtype, [&](auto to_tag) {
      using To = decltype(to_tag);
      parallel_for_each_row<2>({&out, &in}, [&](auto& p, auto& s, std::int64_t n) {
        To* o = reinterpret_cast<To*>(p[0]);
        const From* x = reinterpret_cast<const From*>(p[1]);
        for (std::int64_t i = 0; i < n; ++i) o[i * s[0]] = convert<To>(x[i * s[1]]);
      });
    });
  });
}

void CpuEngine::fill(const TensorView& out, double value) {
  dispatch(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T v = convert<T>(value);
    // Zeroing a contiguous array (gradients, every step) is one memset: all
    // dtypes' zero is all-zero bytes (+0.0 for floats; -0.0 is not).
    if (out.is_contiguous() && v == T(0) && !std::signbit(double(v))) {
      // An empty array may have no buffer: memset(nullptr, 0, 0) is undefined.
      by_bulk_chunks(out.size(), [&](std::int64_t lo, std::int64_t hi) {
        std::memset(static_cast<T*>(out.data) + lo, 0, std::size_t(hi - lo) * sizeof(T));
      });
      return;
    }
    parallel_for_each_row<1>({&out}, [&](auto& p, auto& s, std::int64_t n) {
      T* o = reinterpret_cast<T*>(p[0]);
      if (s[0] == 1) {
        std::fill_n(o, n, v);
        return;
      }
      for (std::int64_t i = 0; i < n; ++i) o[i * s[0]] = v;
    });
  });
}

}  // namespace ndgc::ops::cpu
