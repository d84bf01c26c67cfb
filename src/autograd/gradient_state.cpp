// NDArray::set_requires_gradient / requires_gradient / gradient and
// autograd::zero_gradients. See Note [Gradient storage] in gradient_state.hpp.
//
// Thread-safety: every function may be called from any thread; the state is
// guarded by the array's meta lock. Two threads enabling the gradient of one
// array at once both build a gradient; the loser closes its copy.
#include "autograd/gradient_state.hpp"

#include <mutex>
#include <typeinfo>

#include <fmt/format.h>

#include "core/manager_impl.hpp"
#include "core/publish.hpp"
#include "core/reclaim_queue.hpp"
#include "core/registry.hpp"
#include "ndgc/autograd.hpp"
#include "ndgc/error.hpp"
#include "ops/op_support.hpp"

namespace ndgc {
namespace autograd::detail {

using ndgc::detail::ArrayImpl;

namespace {

// The array's GradientState, or null. GradientState is final, so comparing
// the dynamic type answers what a dynamic_cast would, without its walk of the
// class hierarchy (~50 instructions, on every recorded op's inputs).
GradientState* state_of(const ArrayImpl& a) noexcept {
  ndgc::detail::ArrayExtension* e = a.extension.get();
  return e && typeid(*e) == typeid(GradientState) ? static_cast<GradientState*>(e) : nullptr;
}

}  // namespace

NDArray gradient_of(const ArrayImpl& a) {
  std::lock_guard lock(a.meta);
  GradientState* state = state_of(a);
  return state ? state->gradient : NDArray();
}

NDArray gradient_of(const NDArray& array) noexcept {
  auto* key = ndgc::detail::key_of(array);
  if (!key) return {};
  auto& reg = ndgc::detail::Registry::instance();
  if (!reg.try_pin(key->slot, key->generation)) return {};
  NDArray g = gradient_of(*reg.entry(key->slot).impl.load(std::memory_order_acquire));
  reg.unpin(key->slot);
  return g;
}

bool requires_gradient(const NDArray& array) noexcept {
  auto* key = ndgc::detail::key_of(array);
  if (!key) return false;
  auto& reg = ndgc::detail::Registry::instance();
  if (!reg.try_pin(key->slot, key->generation)) return false;
  const ArrayImpl& a = *reg.entry(key->slot).impl.load(std::memory_order_acquire);
  bool result;
  {
    std::lock_guard lock(a.meta);
    result = state_of(a) != nullptr;
  }
  reg.unpin(key->slot);
  return result;
}

namespace {

// A zero-filled array like `a` (contiguous), published into a's manager.
NDArray new_gradient(const ArrayImpl& a, const std::string& name) {
  auto out = ops::new_output(a.shape, a.dtype, a.device, Site::current());
  if (out->size() > 0) ops::engine(a.device).fill(ops::view_of(*out), 0);
  out->name = name;
  return ops::publish_like(std::move(out), a, "set_requires_gradient");
}

void close_array(const NDArray& array) {
  if (auto* key = ndgc::detail::key_of(array))
    ndgc::detail::Registry::instance().request_close(key->slot, key->generation,
                                                     ndgc::detail::CloseReason::explicit_close, nullptr, nullptr);
}

}  // namespace
}  // namespace autograd::detail

NDArray& NDArray::set_requires_gradient(bool on) {
  using autograd::detail::GradientState;
  detail::enter();
  detail::Pinned a(*this, "set_requires_gradient");
  if (on) {
    if (!is_floating(a->dtype))
      throw DTypeMismatch(fmt::format(
          "set_requires_gradient: {} is {}; only floating arrays have gradients (convert with "
          "to_type())",
          ops::describe(*a), ndgc::to_string(a->dtype)));
    if (autograd::detail::gradient_of(*a).defined()) return *this;
    std::string name = a->get_name();
    NDArray gradient = autograd::detail::new_gradient(*a, name.empty() ? "gradient" : name + ".gradient");
    bool installed = false;
    {
      std::lock_guard lock(a->meta);
      if (!autograd::detail::state_of(*a)) {
        auto state = std::make_unique<GradientState>();
        state->gradient = gradient;
        a->extension = std::move(state);
        installed = true;
      }
    }
    if (!installed) autograd::detail::close_array(gradient);  // another thread won
  } else {
    std::unique_ptr<detail::ArrayExtension> old;
    {
      std::lock_guard lock(a->meta);
      if (autograd::detail::state_of(*a)) old = std::move(a->extension);
    }
    if (old) autograd::detail::close_array(static_cast<GradientState&>(*old).gradient);
  }
  return *this;
}

bool NDArray::requires_gradient() const {
  detail::enter();
  detail::Pinned a(*this, "requires_gradient");
  return autograd::detail::gradient_of(*a).defined();
}

NDArray NDArray::gradient() const {
  detail::enter();
  detail::Pinned a(*this, "gradient");
  NDArray g = autograd::detail::gradient_of(*a);
  if (!g.defined())
    throw InvalidArgument(fmt::format(
        "gradient: {} does not require a gradient; call set_requires_gradient(true) on it before recording",
        ops::describe(*a)));
  return g;
}

namespace autograd {

void zero_gradients(const NDList& arrays) {
  ndgc::detail::enter();
  for (const NDArray& array : arrays) {
    NDArray g;
    {
      ndgc::detail::Pinned a(array, "zero_gradients");
      g = detail::gradient_of(*a);
    }
    if (!g.defined()) continue;
    ndgc::detail::Pinned pg(g, "zero_gradients");
    if (pg->size() > 0) ops::engine(pg->device).fill(ops::view_of(*pg), 0);
  }
}

}  // namespace autograd
}  // namespace ndgc
