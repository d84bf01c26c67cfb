// Scratch tensors and the engine calls of the gradient rules. See scratch.hpp.
#include "autograd/scratch.hpp"

#include "ops/op_support.hpp"
#include "ops/transfer.hpp"

namespace ndgc::autograd::detail {

Scratch::Scratch(const Shape& shape, DataType dtype, Device device)
    : impl_(ndgc::detail::ArrayImpl::make(shape, dtype, device, Site::current())) {}

TensorView Scratch::view() const noexcept { return ops::view_of(*impl_); }

void Scratch::reshape(const Shape& shape) noexcept {
  impl_->shape = shape;
  impl_->strides = ndgc::detail::contiguous_strides(shape);
}

ops::Engine& Scratch::engine() const { return ops::engine(impl_->device); }

TensorView bview(const TensorView& v, const Shape& to) noexcept {
  TensorView out = v;
  out.rank = to.rank();
  const int shift = to.rank() - v.rank;
  for (int i = 0; i < out.rank; ++i) {
    const int j = i - shift;
    out.shape[i] = to[i];
    out.strides[i] = (j < 0 || v.shape[j] != to[i]) ? 0 : v.strides[j];
  }
  return out;
}

Shape shape_of(const TensorView& v) { return Shape(std::span<const std::int64_t>(v.shape, std::size_t(v.rank))); }

TensorView swap_last(const TensorView& v) noexcept {
  TensorView out = v;
  const int r = v.rank;
  std::swap(out.shape[r - 1], out.shape[r - 2]);
  std::swap(out.strides[r - 1], out.strides[r - 2]);
  return out;
}

Scratch full(const Shape& shape, DataType dtype, Device device, double value) {
  Scratch s(shape, dtype, device);
  if (shape.size() > 0) s.engine().fill(s.view(), value);
  return s;
}

Scratch copy(const TensorView& in, const Shape& shape, DataType dtype, Device device) {
  Scratch s(shape, dtype, device);
  if (shape.size() > 0) s.engine().copy(bview(in, shape), s.view());
  return s;
}

Scratch copy(const Scratch& in) { return copy(in.view(), in.shape(), in.dtype(), in.device()); }

Scratch transfer(const TensorView& in, Device from, Device to) {
  Scratch s(shape_of(in), in.dtype, to);
  ops::copy_between(in, from, s.view(), to);
  return s;
}

Scratch unary(Unary op, const TensorView& in, Device device) {
  Scratch s(shape_of(in), in.dtype, device);
  if (s.shape().size() > 0) s.engine().unary(op, in, s.view());
  return s;
}

Scratch binary(Binary op, const TensorView& a, const TensorView& b, const Shape& shape, Device device) {
  Scratch s(shape, ops::is_comparison(op) ? DataType::boolean : a.dtype, device);
  if (shape.size() > 0) s.engine().binary(op, bview(a, shape), bview(b, shape), s.view());
  return s;
}

Scratch scalar(Binary op, const TensorView& a, double value, bool scalar_left, Device device) {
  Scratch s(shape_of(a), ops::is_comparison(op) ? DataType::boolean : a.dtype, device);
  if (s.shape().size() > 0) s.engine().binary_scalar(op, a, value, scalar_left, s.view());
  return s;
}

Scratch where(const TensorView& condition, const TensorView& a, const TensorView& b, const Shape& shape,
              Device device) {
  Scratch s(shape, a.dtype, device);
  if (shape.size() > 0) s.engine().where(bview(condition, shape), bview(a, shape), bview(b, shape), s.view());
  return s;
}

Scratch reduce(Reduce op, const TensorView& in, std::uint32_t mask, Device device) {
  Shape kept = shape_of(in);
  for (int i = 0; i < kept.rank(); ++i)
    if (mask >> i & 1) kept[i] = 1;
  Scratch s(kept, in.dtype, device);
  if (kept.size() > 0) {
    if (shape_of(in).size() == 0) s.engine().fill(s.view(), 0);  // an empty sum
    else s.engine().reduce(op, in, mask, s.view());
  }
  return s;
}

void binary_into(Binary op, Scratch& target, const TensorView& b) {
  if (target.shape().size() == 0) return;
  TensorView t = target.view();
  target.engine().binary(op, t, bview(b, target.shape()), t);
}

void scalar_into(Binary op, Scratch& target, double value, bool scalar_left) {
  if (target.shape().size() == 0) return;
  TensorView t = target.view();
  target.engine().binary_scalar(op, t, value, scalar_left, t);
}

void unary_into(Unary op, Scratch& target) {
  if (target.shape().size() == 0) return;
  TensorView t = target.view();
  target.engine().unary(op, t, t);
}

namespace {

// The axes of `from` that summing down to `target` removes or shrinks to 1.
std::uint32_t summed_axes(const Shape& from, const Shape& target) {
  const int shift = from.rank() - target.rank();
  std::uint32_t mask = 0;
  for (int i = 0; i < from.rank(); ++i) {
    const int j = i - shift;
    if (j < 0 || (target[j] == 1 && from[i] != 1)) mask |= std::uint32_t(1) << i;
  }
  return mask;
}

}  // namespace

Scratch sum_to(Scratch g, const Shape& target) {
  if (g.shape() == target) return g;
  const std::uint32_t mask = summed_axes(g.shape(), target);
  Scratch out = mask ? reduce(Reduce::sum, g.view(), mask, g.device()) : std::move(g);
  out.reshape(target);  // the kept axes are target's, in order; the summed ones have length 1
  return out;
}

Scratch reduce_to(const TensorView& g, const Shape& target, Device device) {
  const std::uint32_t mask = summed_axes(shape_of(g), target);
  Scratch out = mask ? reduce(Reduce::sum, g, mask, device) : copy(g, shape_of(g), g.dtype, device);
  out.reshape(target);
  return out;
}

}  // namespace ndgc::autograd::detail
