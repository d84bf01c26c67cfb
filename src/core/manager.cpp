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

// A manager that can take a loan: open, and not the system manager, which
// never closes and so would never give the array back (DJL refuses it too).
ManagerImpl& need_lender(ManagerImpl* m, const char* op) {
  ManagerImpl& impl = need_open(m, op);
  if (impl.is_system())
    throw InvalidArgument(fmt::format(
        "{}: the system manager cannot be temp-attached to: it never closes, so the array would never go back "
        "to its manager; temp_attach to a sub-manager, or detach() the array to move it to the system manager",
        op));
  return impl;
}

// Open and not capped: what a whole-list attach checks before moving anything.
ManagerImpl* need_joinable(ManagerImpl* m, const char* op) {
  ManagerImpl& impl = need_open(m, op);
  // Mirrors ManagerImpl::check_join, which still guards each array.
  if (impl.is_capped())
    throw ManagerCapped(fmt::format("{}: manager '{}' ({}) is capped: no array may join it", op, impl.path(),
                                    impl.uid().to_string()));
  return &impl;
}

void check_device(Device device, const char* op) {
  if (device.index < 0 || device.index >= kMaxGpus || (device.is_cpu() && device.index != 0))
    throw InvalidArgument(fmt::format("{}: {} is not a valid device", op, device.to_string()));
  support::check_device(device, op);  // a GPU needs the engine and a usable device: fail here, not at the first array
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
  const detail::CloseSite where = detail::CloseSite::at(site);
  need(impl_, "close").close(&where);
}

void ManagerRef::cap() { need_open(impl_, "cap").cap(); }
bool ManagerRef::is_capped() const { return need(impl_, "is_capped").is_capped(); }

NDManager ManagerRef::new_sub_manager(std::string name, Site site) {
  detail::enter();
  ManagerImpl& m = need(impl_, "new_sub_manager");
  return NDManager(m.new_child(std::move(name), m.device(), site));
}

NDManager ManagerRef::new_sub_manager(Device device, Site site) { return new_sub_manager("", device, site); }

NDManager ManagerRef::new_sub_manager(std::string name, Device device, Site site) {
  detail::enter();
  ManagerImpl& m = need(impl_, "new_sub_manager");
  check_device(device, "new_sub_manager");
  return NDManager(m.new_child(std::move(name), device, site));
}

void ManagerRef::attach(const NDArray& array) {
  detail::enter();
  ManagerImpl& m = need_open(impl_, "attach");
  detail::Pinned a(array, "attach");
  m.move_in(*a, detail::Join::attach, "attach");
}

void ManagerRef::temp_attach(const NDArray& array) {
  detail::enter();
  ManagerImpl& m = need_lender(impl_, "temp_attach");
  detail::Pinned a(array, "temp_attach");
  m.move_in(*a, detail::Join::borrow, "temp_attach");
}

void ManagerRef::attach_all(const NDList& arrays) {
  detail::enter();
  need_joinable(impl_, "attach_all");
  for (const NDArray& a : arrays) attach(a);
}

void ManagerRef::temp_attach_all(const NDList& arrays) {
  detail::enter();
  need_joinable(&need_lender(impl_, "temp_attach_all"), "temp_attach_all");
  for (const NDArray& a : arrays) temp_attach(a);
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
      impl_->close_destroyed();  // its arrays' close site names this manager
    } catch (...) {
      // close() only throws for the system manager, excluded above.
    }
  }
}

ManagerRef NDManager::system() { return ManagerRef(&ManagerImpl::system()); }

NDManager NDManager::new_base_manager(std::string name, Device device, Site site) {
  detail::enter();
  check_device(device, "new_base_manager");
  return NDManager(ManagerImpl::system().new_child(std::move(name), device, site));
}

ManagerRef NDManager::release() noexcept {
  ManagerRef ref(impl_);
  if (impl_) impl_->release();
  impl_ = nullptr;
  return ref;
}

}  // namespace ndgc
