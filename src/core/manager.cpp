// ManagerRef and NDManager: the public face of ManagerImpl.
//
// Each call is a public entry point: it drains the reclaim queue first
// (Note [Draining at entry points]) and checks that the reference names an
// open manager. Factories live in the ops layer (src/ops/factories.cpp).
#include <fmt/format.h>

#include "core/manager_impl.hpp"
#include "core/reclaim_queue.hpp"
#include "core/registry.hpp"
#include "ndgc/error.hpp"
#include "ndgc/manager.hpp"
#include "ndgc/ndlist.hpp"
#include "support/gpu_probe.hpp"

namespace ndgc {

using detail::ManagerImpl;

namespace {

ManagerImpl& need(ManagerImpl* m, const char* op) {
  if (!m)
    throw InvalidArgument(fmt::format("{}: the ManagerRef is empty (default-constructed or moved-from)", op));
  return *m;
}

ManagerImpl& need_open(ManagerImpl* m, const char* op) {
  ManagerImpl& impl = need(m, op);
  impl.check_open(op);
  return impl;
}

}  // namespace

ManagerRef::ManagerRef(const ManagerRef& other) noexcept : impl_(other.impl_) {
  if (impl_) impl_->retain();
}
ManagerRef::ManagerRef(ManagerImpl* impl) noexcept : impl_(impl) {
  if (impl_) impl_->retain();
}
ManagerRef::~ManagerRef() {
  if (impl_) impl_->release();
}

std::string ManagerRef::name() const { return need(impl_, "name").name(); }
void ManagerRef::set_name(std::string name) {
  detail::enter();
  need_open(impl_, "set_name").set_name(std::move(name));
}
Uuid ManagerRef::uid() const { return need(impl_, "uid").uid(); }
Device ManagerRef::device() const { return need_open(impl_, "device").device(); }
ManagerRef ManagerRef::parent() const { return ManagerRef(need_open(impl_, "parent").parent()); }
bool ManagerRef::is_open() const noexcept { return impl_ && impl_->is_open(); }
bool ManagerRef::is_system() const noexcept { return impl_ && impl_->is_system(); }

void ManagerRef::close(Site site) {
  detail::enter();
  need(impl_, "close").close(&site);
}

void ManagerRef::cap() { need_open(impl_, "cap").cap(); }
bool ManagerRef::is_capped() const { return need(impl_, "is_capped").is_capped(); }

NDManager ManagerRef::new_sub_manager(std::string name) {
  detail::enter();
  ManagerImpl& m = need(impl_, "new_sub_manager");
  return NDManager(m.new_child(std::move(name), m.device()));
}

void ManagerRef::attach(const NDArray& array) {
  detail::enter();
  ManagerImpl& m = need_open(impl_, "attach");
  detail::Pinned a(array, "attach");
  m.move_in(*a, detail::Join::attach, "attach");
}

void ManagerRef::temp_attach(const NDArray& array) {
  detail::enter();
  ManagerImpl& m = need_open(impl_, "temp_attach");
  detail::Pinned a(array, "temp_attach");
  m.move_in(*a, detail::Join::borrow, "temp_attach");
}

NDArray ManagerRef::ret(const NDArray& array) {
  detail::enter();
  ManagerImpl& m = need_open(impl_, "ret");
  if (m.is_system()) throw InvalidArgument("ret: the system manager has no parent to return an array to");
  detail::Pinned a(array, "ret");
  m.parent()->move_in(*a, detail::Join::ret, "ret");
  return array;
}

NDList ManagerRef::ret(const NDList& arrays) {
  for (const NDArray& a : arrays) ret(a);
  return arrays;
}

std::size_t ManagerRef::resource_count() const {
  ManagerImpl& m = need_open(impl_, "resource_count");
  return m.array_count() + m.child_count();
}

std::size_t ManagerRef::array_count() const { return need_open(impl_, "array_count").array_count(); }

NDList ManagerRef::managed_arrays() const {
  detail::enter();
  std::vector<NDArray> out;
  need_open(impl_, "managed_arrays").collect_arrays(out, true);
  return NDList(std::move(out));
}

std::vector<ManagerRef> ManagerRef::sub_managers() const {
  std::vector<ManagerRef> out;
  for (const detail::ManagerHold& c : need_open(impl_, "sub_managers").children()) out.emplace_back(c.get());
  return out;
}

// debug_dump is defined in the debug layer (src/debug/dump.cpp), the one dumper.

// ---- NDManager -----------------------------------------------------------------

NDManager::NDManager(ManagerImpl* adopted) noexcept { impl_ = adopted; }

NDManager& NDManager::operator=(NDManager&& other) noexcept {
  if (this != &other) {
    NDManager old(std::move(*this));  // closes what this owned
    impl_ = std::exchange(other.impl_, nullptr);
  }
  return *this;
}

NDManager::~NDManager() {
  if (impl_ && !impl_->is_system()) {
    try {
      detail::enter();
      impl_->close(nullptr);
    } catch (...) {
      // close() only throws for the system manager, excluded above.
    }
  }
}

ManagerRef NDManager::system() { return ManagerRef(&ManagerImpl::system()); }

NDManager NDManager::new_base_manager(std::string name, Device device) {
  detail::enter();
  if (device.index < 0 || device.index >= kMaxGpus || (device.is_cpu() && device.index != 0))
    throw InvalidArgument(fmt::format("new_base_manager: {} is not a valid device", device.to_string()));
  support::check_device(device, "new_base_manager");  // fail here, not at the first array
  return NDManager(ManagerImpl::system().new_child(std::move(name), device));
}

ManagerRef NDManager::release() noexcept {
  ManagerRef ref(impl_);
  if (impl_) impl_->release();
  impl_ = nullptr;
  return ref;
}

}  // namespace ndgc
