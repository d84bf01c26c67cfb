// Per-array autograd state: whether an array requires a gradient, and the
// gradient itself.
//
// Note [Gradient storage]
// The state is the array's ArrayExtension (core/array_impl.hpp): a
// GradientState holding a handle to the gradient array, so it lives and dies
// with the array and costs nothing to arrays that never require a gradient.
// It is read and written under the array's `meta` spin lock (set and cleared
// by any thread, read by every recorder), while the array is pinned.
// The gradient is created once, zero-filled, in the array's manager when
// set_requires_gradient(true) is called, and from then on only written in
// place (backward accumulates, zeroing fills). So gradient() returns the same
// array every time and allocates nothing, a training step creates no
// gradient arrays, and zeroing touches exactly the arrays that require one.
// Destroying the state only drops the handle (a lock-free operation), which
// is what makes it safe inside the registry's finalizer, where a manager's
// mutex may be held.
#pragma once

#include "core/array_impl.hpp"
#include "ndgc/ndarray.hpp"

namespace ndgc::autograd::detail {

struct GradientState final : ndgc::detail::ArrayExtension {
  NDArray gradient;
};

// The gradient of the pinned array `a`, or an empty handle when it does not
// require one.
NDArray gradient_of(const ndgc::detail::ArrayImpl& a);
// The same for a handle; an empty handle too when the array is closed.
NDArray gradient_of(const NDArray& array) noexcept;
// Whether the array requires a gradient (false when it is closed); makes no handle.
bool requires_gradient(const NDArray& array) noexcept;

}  // namespace ndgc::autograd::detail
