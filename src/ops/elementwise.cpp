// Element-wise ops: binary with broadcasting (array and scalar operands),
// comparisons, unary functions, where, and their in-place forms.
#include <cmath>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/ndarray.hpp"
#include "ops/op_support.hpp"
#include "ops/autocast.hpp"
#include "ops/record.hpp"

namespace ndgc {
namespace {

using namespace ndgc::ops;

// `name` is the op as the user called it: "add", or "add_" for the in-place form.
void check_binary(const char* name, Binary op, const ArrayImpl& a, const ArrayImpl& b) {
  check_same_device(name, a, b);
  check_same_dtype(name, a, b);
  if (!is_comparison(op) && op != Binary::maximum && op != Binary::minimum) check_numeric(name, a);
}

void check_unary(Unary op, const ArrayImpl& a) {
  switch (op) {
    case Unary::neg:
    case Unary::abs:
    case Unary::square:
    case Unary::relu: check_numeric(name_of(op), a); break;
    default: check_floating(name_of(op), a);
  }
}

// Inside an autocast region: mixed floating dtypes promote (ndgc/autocast.hpp), pow to float32.
DataType promoted(const NDArray& x, const NDArray& y) {
  const DataType a = x.dtype(), b = y.dtype();
  if (size_of(a) == size_of(b)) return DataType::float32;  // float16 with bfloat16
  return size_of(a) > size_of(b) ? a : b;
}

NDArray binary(Binary op, const NDArray& x, const NDArray& y, Site site) {
  if (autocast::promotes(x, y)) {
    const DataType t = promoted(x, y);
    return binary(op, autocast::promote(x, t, site), autocast::promote(y, t, site), site);
  }
  if (op == Binary::pow && autocast::widens({&x, &y}))
    return binary(op, autocast::widen(x, site), autocast::widen(y, site), site);
  detail::enter();
  const char* name = name_of(op);
  Pinned a(x, name), b(y, name);
  check_binary(name, op, *a, *b);
  const bool same = a->shape == b->shape;  // the common case needs no broadcasting
  Shape shape = same ? a->shape : broadcast_shapes(name, *a, *b);
  auto out = new_output(shape, is_comparison(op) ? DataType::boolean : a->dtype, a->device, site, name);
  engine(a->device).binary(op, same ? view_of(*a) : broadcast_view(*a, shape),
                           same ? view_of(*b) : broadcast_view(*b, shape), view_of(*out));
  NDArray result = publish_like(std::move(out), *a, name);
  if (!is_comparison(op)) record({.kind = OpKind::binary, .binary = op}, {x, y}, result);
  return result;
}

// Note [Comparing integers with scalars]
// A scalar operand takes the array's dtype, but a comparison must not
// truncate it first: NumPy says 2 < 2.5, and 2 == 2.5 is false. For integer
// and boolean arrays, a scalar the dtype cannot hold exactly becomes an
// equivalent comparison with one it can (x < 2.5 is x <= 2, x >= 2.5 is
// x > 2), or a constant (x == 2.5, x < 1e30, anything against NaN). Done
// here, before the engine, so every engine compares exactly.
struct ExactCompare {
  Binary op;
  double scalar;
  int constant = -1;  // 0 or 1: every element compares so; -1: run the comparison
};

ExactCompare exact_compare(Binary op, double s, DataType dtype) {
  double lo = 0, hi = 0;  // the dtype holds the integers in [lo, hi)
  switch (dtype) {
    case DataType::int32: lo = -0x1p31, hi = 0x1p31; break;
    case DataType::int64: lo = -0x1p63, hi = 0x1p63; break;
    case DataType::uint8: lo = 0, hi = 256; break;
    case DataType::boolean: lo = 0, hi = 2; break;
    default: return {op, s};  // floats: the engine converts, as NumPy does for Python scalars
  }
  const bool eq_or_ne = op == Binary::eq || op == Binary::ne;
  const bool below_true = op == Binary::gt || op == Binary::ge;  // x > s holds when s is below the range
  if (s != s) return {op, s, op == Binary::ne ? 1 : 0};
  if (s < lo) return {op, s, eq_or_ne ? op == Binary::ne : below_true};
  if (s >= hi) return {op, s, eq_or_ne ? op == Binary::ne : !below_true};
  const double whole = std::floor(s);
  if (whole == s) return {op, s};
  if (eq_or_ne) return {op, s, op == Binary::ne};
  // Between two integers: x < s and x <= s mean x <= floor(s); x > s and x >= s mean x > floor(s).
  return {below_true ? Binary::gt : Binary::le, whole};
}

NDArray binary_scalar(Binary op, const NDArray& x, double s, bool scalar_left, Site site) {
  detail::enter();
  const char* name = name_of(op);
  Pinned a(x, name);
  if (!is_comparison(op) && op != Binary::maximum && op != Binary::minimum) check_numeric(name, *a);
  auto out = new_output(a->shape, is_comparison(op) ? DataType::boolean : a->dtype, a->device, site, name);
  ExactCompare exact{op, s};
  // Comparisons never take the scalar on the left. See Note [Comparing integers with scalars].
  if (is_comparison(op) && !scalar_left) exact = exact_compare(op, s, a->dtype);
  if (exact.constant >= 0)
    engine(a->device).fill(view_of(*out), exact.constant);
  else
    engine(a->device).binary_scalar(exact.op, view_of(*a), exact.scalar, scalar_left, view_of(*out));
  NDArray result = publish_like(std::move(out), *a, name);
  if (!is_comparison(op))
    record({.kind = OpKind::binary_scalar, .binary = op, .scalar = s, .scalar_left = scalar_left}, {x}, result);
  return result;
}

NDArray unary(Unary op, const NDArray& x, Site site) {
  if ((op == Unary::exp || op == Unary::log) && autocast::widens({&x})) return unary(op, autocast::widen(x, site), site);
  detail::enter();
  const char* name = name_of(op);
  Pinned a(x, name);
  check_unary(op, *a);
  auto out = new_output(a->shape, a->dtype, a->device, site, name);
  engine(a->device).unary(op, view_of(*a), view_of(*out));
  NDArray result = publish_like(std::move(out), *a, name);
  record({.kind = OpKind::unary, .unary = op}, {x}, result);
  return result;
}

void binary_into(Binary op, NDArray& self, const NDArray& y) {
  detail::enter();
  std::string name = std::string(name_of(op)) + "_";
  Pinned a(self, name.c_str()), b(y, name.c_str());
  check_binary(name.c_str(), op, *a, *b);
  check_writable(name.c_str(), *a);
  if (!broadcastable(b->shape, a->shape))
    throw ShapeMismatch(fmt::format("{}: {} does not broadcast to the shape of {}, which is written in place", name,
                                    describe(*b), describe(*a)));
  Engine& e = engine(a->device);
  // A source that shares the destination's buffer through a different view
  // would be read after being overwritten: read a copy instead.
  std::unique_ptr<ArrayImpl> copy;
  const ArrayImpl* src = b.get();
  if (b->storage.get() == a->storage.get() &&
      !(b->offset == a->offset && b->shape == a->shape && b->strides == a->strides)) {
    copy = new_output(b->shape, b->dtype, b->device, b->site);
    e.copy(view_of(*b), view_of(*copy));
    src = copy.get();
  }
  e.binary(op, view_of(*a), broadcast_view(*src, a->shape), view_of(*a));
}

void scalar_into(Binary op, NDArray& self, double s) {
  detail::enter();
  std::string name = std::string(name_of(op)) + "_";
  Pinned a(self, name.c_str());
  check_numeric(name.c_str(), *a);
  check_writable(name.c_str(), *a);
  engine(a->device).binary_scalar(op, view_of(*a), s, false, view_of(*a));
}

void unary_into(Unary op, NDArray& self) {
  detail::enter();
  Pinned a(self, name_of(op));
  check_unary(op, *a);
  check_writable(name_of(op), *a);
  engine(a->device).unary(op, view_of(*a), view_of(*a));
}

}  // namespace

NDArray NDArray::add(const NDArray& o, Site s) const { return binary(Binary::add, *this, o, s); }
NDArray NDArray::sub(const NDArray& o, Site s) const { return binary(Binary::sub, *this, o, s); }
NDArray NDArray::mul(const NDArray& o, Site s) const { return binary(Binary::mul, *this, o, s); }
NDArray NDArray::div(const NDArray& o, Site s) const { return binary(Binary::div, *this, o, s); }
NDArray NDArray::pow(const NDArray& o, Site s) const { return binary(Binary::pow, *this, o, s); }
NDArray NDArray::maximum(const NDArray& o, Site s) const { return binary(Binary::maximum, *this, o, s); }
NDArray NDArray::minimum(const NDArray& o, Site s) const { return binary(Binary::minimum, *this, o, s); }
NDArray NDArray::eq(const NDArray& o, Site s) const { return binary(Binary::eq, *this, o, s); }
NDArray NDArray::ne(const NDArray& o, Site s) const { return binary(Binary::ne, *this, o, s); }
NDArray NDArray::gt(const NDArray& o, Site s) const { return binary(Binary::gt, *this, o, s); }
NDArray NDArray::ge(const NDArray& o, Site s) const { return binary(Binary::ge, *this, o, s); }
NDArray NDArray::lt(const NDArray& o, Site s) const { return binary(Binary::lt, *this, o, s); }
NDArray NDArray::le(const NDArray& o, Site s) const { return binary(Binary::le, *this, o, s); }

NDArray NDArray::add(double v, Site s) const { return binary_scalar(Binary::add, *this, v, false, s); }
NDArray NDArray::sub(double v, Site s) const { return binary_scalar(Binary::sub, *this, v, false, s); }
NDArray NDArray::mul(double v, Site s) const { return binary_scalar(Binary::mul, *this, v, false, s); }
NDArray NDArray::div(double v, Site s) const { return binary_scalar(Binary::div, *this, v, false, s); }
NDArray NDArray::pow(double v, Site s) const { return binary_scalar(Binary::pow, *this, v, false, s); }
NDArray NDArray::maximum(double v, Site s) const { return binary_scalar(Binary::maximum, *this, v, false, s); }
NDArray NDArray::minimum(double v, Site s) const { return binary_scalar(Binary::minimum, *this, v, false, s); }
NDArray NDArray::rsub(double v, Site s) const { return binary_scalar(Binary::sub, *this, v, true, s); }
NDArray NDArray::rdiv(double v, Site s) const { return binary_scalar(Binary::div, *this, v, true, s); }
NDArray NDArray::eq(double v, Site s) const { return binary_scalar(Binary::eq, *this, v, false, s); }
NDArray NDArray::ne(double v, Site s) const { return binary_scalar(Binary::ne, *this, v, false, s); }
NDArray NDArray::gt(double v, Site s) const { return binary_scalar(Binary::gt, *this, v, false, s); }
NDArray NDArray::ge(double v, Site s) const { return binary_scalar(Binary::ge, *this, v, false, s); }
NDArray NDArray::lt(double v, Site s) const { return binary_scalar(Binary::lt, *this, v, false, s); }
NDArray NDArray::le(double v, Site s) const { return binary_scalar(Binary::le, *this, v, false, s); }

NDArray& NDArray::add_(const NDArray& o) { return binary_into(Binary::add, *this, o), *this; }
NDArray& NDArray::sub_(const NDArray& o) { return binary_into(Binary::sub, *this, o), *this; }
NDArray& NDArray::mul_(const NDArray& o) { return binary_into(Binary::mul, *this, o), *this; }
NDArray& NDArray::div_(const NDArray& o) { return binary_into(Binary::div, *this, o), *this; }
NDArray& NDArray::pow_(const NDArray& o) { return binary_into(Binary::pow, *this, o), *this; }
NDArray& NDArray::maximum_(const NDArray& o) { return binary_into(Binary::maximum, *this, o), *this; }
NDArray& NDArray::minimum_(const NDArray& o) { return binary_into(Binary::minimum, *this, o), *this; }
NDArray& NDArray::add_(double v) { return scalar_into(Binary::add, *this, v), *this; }
NDArray& NDArray::sub_(double v) { return scalar_into(Binary::sub, *this, v), *this; }
NDArray& NDArray::mul_(double v) { return scalar_into(Binary::mul, *this, v), *this; }
NDArray& NDArray::div_(double v) { return scalar_into(Binary::div, *this, v), *this; }
NDArray& NDArray::pow_(double v) { return scalar_into(Binary::pow, *this, v), *this; }
NDArray& NDArray::maximum_(double v) { return scalar_into(Binary::maximum, *this, v), *this; }
NDArray& NDArray::minimum_(double v) { return scalar_into(Binary::minimum, *this, v), *this; }

NDArray NDArray::neg(Site s) const { return unary(Unary::neg, *this, s); }
NDArray NDArray::abs(Site s) const { return unary(Unary::abs, *this, s); }
NDArray NDArray::exp(Site s) const { return unary(Unary::exp, *this, s); }
NDArray NDArray::log(Site s) const { return unary(Unary::log, *this, s); }
NDArray NDArray::sqrt(Site s) const { return unary(Unary::sqrt, *this, s); }
NDArray NDArray::square(Site s) const { return unary(Unary::square, *this, s); }
NDArray NDArray::relu(Site s) const { return unary(Unary::relu, *this, s); }
NDArray NDArray::sigmoid(Site s) const { return unary(Unary::sigmoid, *this, s); }
NDArray NDArray::tanh(Site s) const { return unary(Unary::tanh, *this, s); }
NDArray NDArray::floor(Site s) const { return unary(Unary::floor, *this, s); }
NDArray NDArray::ceil(Site s) const { return unary(Unary::ceil, *this, s); }
NDArray NDArray::round(Site s) const { return unary(Unary::round, *this, s); }
NDArray NDArray::sin(Site s) const { return unary(Unary::sin, *this, s); }
NDArray NDArray::cos(Site s) const { return unary(Unary::cos, *this, s); }
NDArray NDArray::tan(Site s) const { return unary(Unary::tan, *this, s); }
NDArray NDArray::asin(Site s) const { return unary(Unary::asin, *this, s); }
NDArray NDArray::acos(Site s) const { return unary(Unary::acos, *this, s); }
NDArray NDArray::atan(Site s) const { return unary(Unary::atan, *this, s); }
NDArray NDArray::sinh(Site s) const { return unary(Unary::sinh, *this, s); }
NDArray NDArray::cosh(Site s) const { return unary(Unary::cosh, *this, s); }
NDArray NDArray::asinh(Site s) const { return unary(Unary::asinh, *this, s); }
NDArray NDArray::acosh(Site s) const { return unary(Unary::acosh, *this, s); }
NDArray NDArray::atanh(Site s) const { return unary(Unary::atanh, *this, s); }
NDArray NDArray::erf(Site s) const { return unary(Unary::erf, *this, s); }
NDArray& NDArray::neg_() { return unary_into(Unary::neg, *this), *this; }
NDArray& NDArray::abs_() { return unary_into(Unary::abs, *this), *this; }
NDArray& NDArray::exp_() { return unary_into(Unary::exp, *this), *this; }
NDArray& NDArray::log_() { return unary_into(Unary::log, *this), *this; }
NDArray& NDArray::sqrt_() { return unary_into(Unary::sqrt, *this), *this; }
NDArray& NDArray::relu_() { return unary_into(Unary::relu, *this), *this; }
NDArray& NDArray::sigmoid_() { return unary_into(Unary::sigmoid, *this), *this; }
NDArray& NDArray::tanh_() { return unary_into(Unary::tanh, *this), *this; }

NDArray& NDArray::fill_(double value) {
  detail::enter();
  Pinned a(*this, "fill_");
  check_writable("fill_", *a);
  engine(a->device).fill(view_of(*a), value);
  return *this;
}

NDArray& NDArray::assign_(const NDArray& source) {
  detail::enter();
  Pinned a(*this, "assign_"), b(source, "assign_");
  check_same_device("assign_", *a, *b);
  check_same_dtype("assign_", *a, *b);
  check_writable("assign_", *a);
  if (!broadcastable(b->shape, a->shape))
    throw ShapeMismatch(fmt::format("assign_: {} does not broadcast to the shape of {}", describe(*b), describe(*a)));
  Engine& e = engine(a->device);
  if (b->storage.get() == a->storage.get()) {
    auto copy = new_output(b->shape, b->dtype, b->device, b->site);
    e.copy(view_of(*b), view_of(*copy));
    e.copy(broadcast_view(*copy, a->shape), view_of(*a));
  } else {
    e.copy(broadcast_view(*b, a->shape), view_of(*a));
  }
  return *this;
}

NDArray where(const NDArray& condition, const NDArray& x, const NDArray& y, Site site) {
  detail::enter();
  Pinned c(condition, "where"), a(x, "where"), b(y, "where");
  if (c->dtype != DataType::boolean)
    throw DTypeMismatch(fmt::format("where: the condition {} must be boolean (from a comparison such as gt())",
                                    describe(*c)));
  check_same_device("where", *c, *a);
  check_same_device("where", *a, *b);
  check_same_dtype("where", *a, *b);
  std::optional<Shape> three_way = broadcast_shape(c->shape, broadcast_shapes("where", *a, *b));
  if (!three_way)
    throw ShapeMismatch(fmt::format("where: the condition {} does not broadcast with {} and {}", describe(*c),
                                    describe(*a), describe(*b)));
  const Shape& shape = *three_way;
  auto out = new_output(shape, a->dtype, a->device, site, "where");
  engine(a->device).where(broadcast_view(*c, shape), broadcast_view(*a, shape), broadcast_view(*b, shape),
                          view_of(*out));
  NDArray result = publish_like(std::move(out), *a, "where");
  record({.kind = OpKind::where}, {condition, x, y}, result);
  return result;
}

}  // namespace ndgc
