// Scratch tensors for backward(): intermediate gradients that no manager
// owns.
//
// A Scratch is a contiguous ArrayImpl that is never published: no registry
// slot, no key, no manager. Its buffer comes from the device's allocator (so
// memory::stats counts it) and goes back when the Scratch is destroyed; the
// backward pass frees each node's gradient as soon as it has been passed on.
// That is how backward() leaves nothing behind in any manager (see the top of
// ndgc/autograd.hpp).
//
// The helpers below are the handful of kernels the gradient rules need, as
// thin calls into the device's engine (ops/engine.hpp): they work on any
// device and never record. Inputs are TensorViews (of pinned arrays or of
// other scratches) broadcast to the result's shape with bview().
// Thread-safety: a Scratch belongs to the thread that made it.
#pragma once

#include <cstdint>
#include <memory>

#include "core/array_impl.hpp"
#include "ops/engine.hpp"

namespace ndgc::autograd::detail {

using ops::Binary;
using ops::Reduce;
using ops::TensorView;
using ops::Unary;

class Scratch {
 public:
  Scratch() = default;
  Scratch(const Shape& shape, DataType dtype, Device device);  // uninitialised
  explicit operator bool() const noexcept { return impl_ != nullptr; }
  const Shape& shape() const noexcept { return impl_->shape; }
  DataType dtype() const noexcept { return impl_->dtype; }
  Device device() const noexcept { return impl_->device; }
  TensorView view() const noexcept;
  // The same elements seen with `shape` (same element count).
  void reshape(const Shape& shape) noexcept;
  ops::Engine& engine() const;

 private:
  std::unique_ptr<ndgc::detail::ArrayImpl> impl_;
};

// `v` seen with shape `to` (v's shape broadcasts to it): stride 0 on new and
// stretched axes.
TensorView bview(const TensorView& v, const Shape& to) noexcept;
Shape shape_of(const TensorView& v);
// `v` with its last two axes swapped (a transposed matrix view).
TensorView swap_last(const TensorView& v) noexcept;

Scratch full(const Shape& shape, DataType dtype, Device device, double value);
// A contiguous copy of `in` (broadcast to `shape`), converted to `dtype`.
Scratch copy(const TensorView& in, const Shape& shape, DataType dtype, Device device);
Scratch copy(const Scratch& in);
// A contiguous copy of `in` (on device `from`) on device `to`, through the
// engines' transfers: to_device's gradient going back to its source.
Scratch transfer(const TensorView& in, Device from, Device to);
Scratch unary(Unary op, const TensorView& in, Device device);
// a op b, both broadcast to `shape`; comparisons give booleans.
Scratch binary(Binary op, const TensorView& a, const TensorView& b, const Shape& shape, Device device);
// a op s (s op a when scalar_left).
Scratch scalar(Binary op, const TensorView& a, double s, bool scalar_left, Device device);
// condition ? a : b, all three broadcast to `shape`.
Scratch where(const TensorView& condition, const TensorView& a, const TensorView& b, const Shape& shape,
              Device device);
// Sums the axes of `mask`, keeping them with length 1.
Scratch reduce(Reduce op, const TensorView& in, std::uint32_t mask, Device device);

// In place on `target`: target = target op b (b broadcast to target's shape).
void binary_into(Binary op, Scratch& target, const TensorView& b);
void scalar_into(Binary op, Scratch& target, double s, bool scalar_left = false);
void unary_into(Unary op, Scratch& target);

// `g` summed down to `target` (the shape of an input that was broadcast to
// g's shape): sums the leading axes g has in excess and the axes where
// target has length 1. Returns g itself when the shapes are equal.
Scratch sum_to(Scratch g, const Shape& target);
// The same from a view, always into a new scratch (g's shape differs from target).
Scratch reduce_to(const TensorView& g, const Shape& target, Device device);

}  // namespace ndgc::autograd::detail
