// CUDA element-wise kernels: fill, copy with dtype conversion, unary, binary
// (array and scalar operands), where. Twin of src/ops/cpu/elementwise_kernels.cpp
// with the same semantics: integer arithmetic wraps (computed in the unsigned
// type), integer division by zero is flagged in the error slot (the engine
// throws InvalidArgument), maximum/minimum propagate NaN.
#include <cmath>
#include <type_traits>

#include "kernels.hpp"
#include "launch.cuh"
#include "ops/random_stream.hpp"

namespace ndgc::cuda::kernels {
namespace {

using ops::Binary;
using ops::Unary;
using ops::random::convert;

template <class T>
using Wide = std::make_unsigned_t<std::conditional_t<std::is_same_v<T, bool>, unsigned char, T>>;

template <class T>
__device__ T ipow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) return base == 1 ? T(1) : base == T(-1) ? (exp % 2 ? T(-1) : T(1)) : T(0);
  }
  Wide<T> result = 1, b = Wide<T>(base);
  for (auto e = Wide<T>(exp); e; e >>= 1) {
    if (e & 1) result *= b;
    b *= b;
  }
  return T(result);
}

template <class T>
__device__ T apply_binary(Binary op, T a, T b, std::int64_t* err) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case Binary::add: return a + b;
      case Binary::sub: return a - b;
      case Binary::mul: return a * b;
      case Binary::div: return a / b;
      case Binary::pow: return ::pow(a, b);
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
        if (b == 0) {
          err[1] = 0;
          err[0] = 1;  // every offender writes the same values: a benign race
          return T(0);
        }
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
__device__ bool apply_compare(Binary op, T a, T b) {
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
__device__ T apply_unary(Unary op, T x) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case Unary::neg: return -x;
      case Unary::abs: return ::fabs(x);
      case Unary::exp: return ::exp(x);
      case Unary::log: return ::log(x);
      case Unary::sqrt: return ::sqrt(x);
      case Unary::square: return x * x;
      case Unary::relu: return x > T(0) ? x : T(0);
      case Unary::sigmoid: return T(1) / (T(1) + ::exp(-x));
      case Unary::tanh: return ::tanh(x);
      case Unary::floor: return ::floor(x);
      case Unary::ceil: return ::ceil(x);
      case Unary::round: return ::nearbyint(x);  // half to even, as the CPU's
      case Unary::sin: return ::sin(x);
      case Unary::cos: return ::cos(x);
      case Unary::tan: return ::tan(x);
      case Unary::asin: return ::asin(x);
      case Unary::acos: return ::acos(x);
      case Unary::atan: return ::atan(x);
      case Unary::sinh: return ::sinh(x);
      case Unary::cosh: return ::cosh(x);
      case Unary::asinh: return ::asinh(x);
      case Unary::acosh: return ::acosh(x);
      case Unary::atanh: return ::atanh(x);
      case Unary::erf: return ::erf(x);
    }
  } else {
    using U = Wide<T>;
    switch (op) {
      case Unary::neg: return T(U(0) - U(x));
      case Unary::abs:
        if constexpr (std::is_signed_v<T>) return x < T(0) ? T(U(0) - U(x)) : x;
        return x;
      case Unary::square: return T(U(x) * U(x));
      case Unary::relu: return x > T(0) ? x : T(0);
      default: break;  // the ops layer allows only the four above on integers
    }
  }
  return x;
}

// Typed bodies: a __device__ lambda may not sit inside dispatch()'s generic lambda.
template <class T>
void fill_typed(const TensorView& out, double value, cudaStream_t stream) {
  T* o = static_cast<T*>(out.data);
  const T v = convert<T>(value);
  const TensorView* views[1] = {&out};
  for_each(views, stream, [=] __device__(std::int64_t, const std::int64_t(&off)[1]) { o[off[0]] = v; });
}

template <class From, class To>
void copy_typed(const TensorView& in, const TensorView& out, cudaStream_t stream) {
  To* o = static_cast<To*>(out.data);
  const From* x = static_cast<const From*>(in.data);
  const TensorView* views[2] = {&out, &in};
  for_each(views, stream,
           [=] __device__(std::int64_t, const std::int64_t(&off)[2]) { o[off[0]] = convert<To>(x[off[1]]); });
}

template <class T>
void unary_typed(Unary op, const TensorView& in, const TensorView& out, cudaStream_t stream) {
  using C = Compute<T>;
  T* o = static_cast<T*>(out.data);
  const T* x = static_cast<const T*>(in.data);
  const TensorView* views[2] = {&out, &in};
  for_each(views, stream, [=] __device__(std::int64_t, const std::int64_t(&off)[2]) {
    o[off[0]] = T(apply_unary(op, C(x[off[1]])));
  });
}

template <class T>
void binary_typed(Binary op, const TensorView& a, const TensorView& b, const TensorView& out, double scalar,
                  int side, std::int64_t* err, cudaStream_t stream) {
  using C = Compute<T>;
  const C s = convert<C>(scalar);
  const T* pa = static_cast<const T*>(a.data);
  const T* pb = static_cast<const T*>(b.data);
  // A scalar operand's view is the array's own (any strides will do): its data is never read.
  const TensorView* views[3] = {&out, &a, &b};
  if (ops::is_comparison(op)) {
    bool* o = static_cast<bool*>(out.data);
    for_each(views, stream, [=] __device__(std::int64_t, const std::int64_t(&off)[3]) {
      const C x = side == 1 ? s : C(pa[off[1]]), y = side == 2 ? s : C(pb[off[2]]);
      o[off[0]] = apply_compare(op, x, y);
    });
  } else {
    T* o = static_cast<T*>(out.data);
    // Explicit captures: nvcc refuses a first capture inside `if constexpr`.
    for_each(views, stream, [o, pa, pb, s, side, op, err] __device__(std::int64_t, const std::int64_t(&off)[3]) {
      const C x = side == 1 ? s : C(pa[off[1]]), y = side == 2 ? s : C(pb[off[2]]);
      if constexpr (std::is_same_v<T, bool>) {
        o[off[0]] = op == Binary::maximum ? (x || y) : (x && y);  // booleans only compare, or/and
      } else {
        o[off[0]] = T(apply_binary(op, x, y, err));
      }
    });
  }
}

template <class T>
void where_typed(const TensorView& condition, const TensorView& a, const TensorView& b, const TensorView& out,
                 cudaStream_t stream) {
  T* o = static_cast<T*>(out.data);
  const bool* c = static_cast<const bool*>(condition.data);
  const T* x = static_cast<const T*>(a.data);
  const T* y = static_cast<const T*>(b.data);
  const TensorView* views[4] = {&out, &condition, &a, &b};
  for_each(views, stream, [=] __device__(std::int64_t, const std::int64_t(&off)[4]) {
    o[off[0]] = c[off[1]] ? x[off[2]] : y[off[3]];
  });
}

}  // namespace

void fill(const TensorView& out, double value, cudaStream_t stream) {
  dispatch_storage(out.dtype, [&](auto tag) { fill_typed<decltype(tag)>(out, value, stream); });
}

void copy(const TensorView& in, const TensorView& out, cudaStream_t stream) {
  if (in.size() == 0) return;
  if (in.dtype == out.dtype && in.is_contiguous() && out.is_contiguous()) {
    if (in.data != out.data)
      CUDA_CHECK(cudaMemcpyAsync(out.data, in.data, std::size_t(in.size()) * size_of(in.dtype),
                                 cudaMemcpyDeviceToDevice, stream));
    return;
  }
  dispatch_storage(in.dtype, [&](auto from_tag) {
    dispatch_storage(out.dtype, [&](auto to_tag) { copy_typed<decltype(from_tag), decltype(to_tag)>(in, out, stream); });
  });
}

void unary(Unary op, const TensorView& in, const TensorView& out, cudaStream_t stream) {
  dispatch_storage(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) unary_typed<T>(op, in, out, stream);
  });
}

void binary(Binary op, const TensorView& a, const TensorView& b, const TensorView& out, double scalar,
            int scalar_side, std::int64_t* err, cudaStream_t stream) {
  dispatch_storage(a.dtype, [&](auto tag) { binary_typed<decltype(tag)>(op, a, b, out, scalar, scalar_side, err, stream); });
}

void where(const TensorView& condition, const TensorView& a, const TensorView& b, const TensorView& out,
           cudaStream_t stream) {
  dispatch_storage(a.dtype, [&](auto tag) { where_typed<decltype(tag)>(condition, a, b, out, stream); });
}

}  // namespace ndgc::cuda::kernels
