// NDArray's handle-level methods: identity, state and manager membership.
//
// Each is a public entry point: drain first (Note [Draining at entry
// points]), then pin the array for the duration of the call (Note [Close
// protocol]). Ops and data access live in the ops layer (src/ops/).
#include <fmt/format.h>

#include "core/array_impl.hpp"
#include "core/autoclose.hpp"
#include "core/manager_impl.hpp"
#include "core/reclaim_queue.hpp"
#include "core/registry.hpp"
#include "ndgc/error.hpp"
#include "ndgc/manager.hpp"

namespace ndgc {

using detail::enter;
using detail::Pinned;

Uuid NDArray::uid() const {
  if (!key_) detail::throw_empty("uid");
  return detail::key_of(*this)->uuid;
}

std::string NDArray::name() const {
  enter();
  return Pinned(*this, "name")->get_name();
}

void NDArray::set_name(std::string name) {
  enter();
  Pinned a(*this, "set_name");
  std::lock_guard lock(a->meta);
  a->name = std::move(name);
}

// Fixed metadata comes from the key: no pin (Note [Metadata in the key]).
Shape NDArray::shape() const {
  enter();
  return detail::open_key(*this, "shape").shape;
}

DataType NDArray::dtype() const {
  enter();
  return detail::open_key(*this, "dtype").dtype;
}

Device NDArray::device() const {
  enter();
  return detail::open_key(*this, "device").device;
}

std::int64_t NDArray::size() const {
  enter();
  return detail::open_key(*this, "size").shape.size();
}

int NDArray::rank() const {
  enter();
  return detail::open_key(*this, "rank").shape.rank();
}

std::size_t NDArray::nbytes() const {
  enter();
  const detail::Key& k = detail::open_key(*this, "nbytes");
  return std::size_t(k.shape.size()) * size_of(k.dtype);
}

Shape NDArray::strides() const {
  enter();
  return Pinned(*this, "strides")->strides;
}

bool NDArray::is_contiguous() const {
  enter();
  return Pinned(*this, "is_contiguous")->is_contiguous();
}

bool NDArray::shares_storage(const NDArray& other) const {
  enter();
  Pinned a(*this, "shares_storage"), b(other, "shares_storage");
  return a->storage.get() == b->storage.get();
}

Site NDArray::creation_site() const {
  enter();
  return Pinned(*this, "creation_site")->site;
}

std::uint32_t NDArray::handle_count() const noexcept {
  return key_ ? key_->strong.load(std::memory_order_relaxed) : 0;
}

bool NDArray::is_closed() const noexcept {
  if (!key_) return true;
  enter();
  const detail::Key* k = detail::key_of(*this);
  return !detail::Registry::instance().is_open_valid(k->slot, k->generation);
}

void NDArray::close(Site site) {
  enter();
  if (!key_) return;
  const detail::Key* k = detail::key_of(*this);
  const detail::CloseSite where = detail::CloseSite::at(site);
  detail::Registry::instance().request_close(k->slot, k->generation, detail::CloseReason::explicit_close, &where,
                                             nullptr);
}

ManagerRef NDArray::manager() const {
  enter();
  Pinned a(*this, "manager");
  detail::ManagerHold owner(a->acquire_owner());
  return ManagerRef(owner.get());
}

void NDArray::attach(const ManagerRef& manager) { ManagerRef(manager).attach(*this); }

void NDArray::temp_attach(const ManagerRef& manager) { ManagerRef(manager).temp_attach(*this); }

// See the declarations in ndarray.hpp: one relaxed load decides, so the
// detector costs nothing here while it is off.
void* NDArray::operator new(std::size_t size) {
  if (detail::tracing()) {
    if (void* p = detail::trace_hooks()->new_handle(size)) return p;
    throw std::bad_alloc();
  }
  return ::operator new(size);
}

void* NDArray::operator new(std::size_t size, const std::nothrow_t&) noexcept {
  if (detail::tracing()) return detail::trace_hooks()->new_handle(size);
  return ::operator new(size, std::nothrow);
}

void NDArray::operator delete(void* p) noexcept {
  if (!p) return;
  // Once the trace library registered, an object may come from either heap:
  // it tells them apart (the detector may have been switched off since).
  if (const detail::TraceHooks* hooks = detail::trace_hooks()) hooks->delete_handle(p);
  else ::operator delete(p);
}

void NDArray::detach() {
  enter();
  Pinned a(*this, "detach");
  detail::ManagerImpl::system().move_in(*a, detail::Join::detach, "detach");
}

}  // namespace ndgc
