// ManagerImpl: the manager tree, array membership, moves and close.
// Locking rules are in manager_impl.hpp; closing arrays follows Note [Close
// protocol] in registry.hpp.
#include "core/manager_impl.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/autoclose.hpp"
#include "core/registry.hpp"
#include "core/reclaim_queue.hpp"
#include "core/workspace_arrays.hpp"
#include "memory/allocator.hpp"
#include "memory/workspace.hpp"
#include "ndgc/error.hpp"
#include "ndgc/memory.hpp"
#include "support/free_list.hpp"

namespace ndgc::detail {

ManagerHold::ManagerHold(const ManagerHold& o) noexcept : m_(o.m_) {
  if (m_) m_->retain();
}
ManagerHold::~ManagerHold() {
  if (m_) m_->release();
}

namespace {

// Memory pressure: close what auto-close has queued (under the trace
// detector, collect first: leaked handles join the queue), then let the
// allocator retry.
void relieve_pressure(Device) {
  if (tracing())
    if (const TraceHooks* hooks = trace_hooks()) hooks->collect();
  drain_now();
}

struct Holder {
  std::string path;
  std::uint64_t bytes;
  std::size_t arrays;
};

void collect_holders(const ManagerImpl& m, Device device, std::vector<Holder>& out) {
  if (m.device() == device || m.is_system())
    out.push_back({m.path(), m.bytes(), m.array_count()});
  for (const ManagerHold& child : m.children()) collect_holders(*child.get(), device, out);
}

// For OutOfMemory messages: the three managers holding the most bytes.
std::string report_holders(Device device) {
  std::vector<Holder> holders;
  collect_holders(ManagerImpl::system(), device, holders);
  std::sort(holders.begin(), holders.end(), [](const Holder& a, const Holder& b) { return a.bytes > b.bytes; });
  std::string text;
  for (std::size_t i = 0; i < holders.size() && i < 3; ++i) {
    if (holders[i].bytes == 0) break;
    text += fmt::format("{}{} ({} in {} arrays)", i ? ", " : "", holders[i].path,
                        memory::format_bytes(holders[i].bytes), holders[i].arrays);
  }
  return text;
}

}  // namespace

ManagerImpl::ManagerImpl(std::string name, Device device, ManagerImpl* parent, Site site)
    : uid_(Uuid::random()), device_(device), parent_(parent), created_(site), name_(std::move(name)) {
  if (parent_) parent_->retain();
}

// Managers made with create() (a batch's, a scope's: one per step) come from
// a per-thread free list (Note [Object free lists] in support/free_list.hpp);
// release() gives them back. The system manager is never freed.
using ManagerFreeList = support::FreeList<sizeof(ManagerImpl), ManagerImpl>;

ManagerImpl* ManagerImpl::create(std::string name, Device device, ManagerImpl* parent, Site site) {
  void* p = ManagerFreeList::allocate();
  try {
    return new (p) ManagerImpl(std::move(name), device, parent, site);
  } catch (...) {
    ManagerFreeList::free(p);
    throw;
  }
}

ManagerImpl& ManagerImpl::system() noexcept {
  // Never destroyed, like the registry: the root outlives every static handle.
  static ManagerImpl* root = [] {
    memory::set_pressure_handler(relieve_pressure);
    memory::set_oom_reporter(report_holders);
    memory::set_lease_recycler(recycle_leases);
    return new ManagerImpl("system", Device::cpu(), nullptr, Site());
  }();
  return *root;
}

void ManagerImpl::release() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  ManagerImpl* parent = parent_;
  this->~ManagerImpl();
  ManagerFreeList::free(this);
  if (parent) parent->release();
}

std::string ManagerImpl::name() const {
  std::lock_guard lock(name_lock_);
  return name_;
}

void ManagerImpl::set_name(std::string name) {
  std::lock_guard lock(name_lock_);
  name_ = std::move(name);
}

std::string ManagerImpl::path() const {
  std::string own = name();
  if (own.empty()) own = uid_.to_string().substr(0, 8);
  return parent_ ? parent_->path() + "/" + own : own;
}

void ManagerImpl::check_open(const char* op) const {
  if (!is_open())
    throw ManagerClosed(fmt::format("{}: manager '{}' ({}) is closed; create arrays in an open manager", op,
                                    path(), uid_.to_string()));
}

void ManagerImpl::check_join(Join how, const char* op) const {
  if (closed_.load(std::memory_order_relaxed))
    throw ManagerClosed(fmt::format("{}: cannot add an array to manager '{}' ({}): it is closed", op, path(),
                                    uid_.to_string()));
  bool exempt = how == Join::ret || how == Join::detach || how == Join::give_back;
  if (!exempt && capped_.load(std::memory_order_relaxed))
    throw ManagerCapped(fmt::format(
        "{}: manager '{}' ({}) is capped: no array may join it. An op's output joins the manager of its "
        "first input: create per-step arrays in a sub-manager, or move the result with ret()",
        op, path(), uid_.to_string()));
}

ManagerImpl* ManagerImpl::new_child(std::string name, Device device, Site site) {
  std::lock_guard lock(mu_);
  if (closed_.load(std::memory_order_relaxed))
    throw ManagerClosed(fmt::format("new_sub_manager: manager '{}' ({}) is closed", path(), uid_.to_string()));
  ManagerImpl* child = create(std::move(name), device, this, site);
  child->retain();  // the list's reference; the caller owns the other
  children_.push_back(child);
  return child;
}

void ManagerImpl::forget_child(ManagerImpl* child) {
  bool found = false;
  {
    std::lock_guard lock(mu_);
    auto it = std::find(children_.begin(), children_.end(), child);
    if (it != children_.end()) {
      children_.erase(it);
      found = true;
    }
  }
  if (found) child->release();
}

void ManagerImpl::list_add(ArrayImpl* a, bool borrowed) noexcept {
  a->prev = nullptr;
  a->next = head_;
  if (head_) head_->prev = a;
  head_ = a;
  a->borrowed = borrowed;
  ++count_;
  bytes_ += a->charged_bytes();
}

void ManagerImpl::list_remove(ArrayImpl* a) noexcept {
  if (a->prev) a->prev->next = a->next;
  else head_ = a->next;
  if (a->next) a->next->prev = a->prev;
  a->prev = a->next = nullptr;
  --count_;
  bytes_ -= a->charged_bytes();
}

Key* ManagerImpl::link_new(ArrayImpl* array, Join how, const char* op) {
  std::lock_guard lock(mu_);
  check_join(how, op);
  // Nothing else can see the array before insert() publishes it: no meta lock.
  array->owner = this;
  Key* key;
  try {
    key = Registry::instance().insert(array);  // the last step that can throw
  } catch (...) {
    array->owner = nullptr;
    throw;
  }
  retain();
  list_add(array, false);
  return key;
}

void ManagerImpl::move_in(ArrayImpl& array, Join how, const char* op) {
  std::vector<ManagerImpl*> dropped;  // references to release once the locks are gone
  for (;;) {
    ManagerHold from(array.acquire_owner());
    if (from.get() == this) {
      if (how == Join::borrow) return;  // lending an array to its own manager changes nothing
      std::lock_guard lock(mu_);
      if (array.owner != this) continue;
      check_join(how, op);
      std::lock_guard meta(array.meta);
      dropped.swap(array.lenders);  // a permanent attach ends any loan
      array.borrowed = false;
      break;
    }
    std::scoped_lock both(from->mu_, mu_);
    {
      std::lock_guard meta(array.meta);
      if (array.owner != from.get()) continue;  // moved meanwhile; try again
    }
    check_join(how, op);
    from->list_remove(&array);
    retain();
    {
      std::lock_guard meta(array.meta);
      if (how == Join::borrow) {
        from->retain();
        array.lenders.push_back(from.get());
      } else if (how != Join::give_back) {
        dropped.swap(array.lenders);
      }
      array.owner = this;
    }
    dropped.push_back(from.get());  // the array's old owner reference
    list_add(&array, !array.lenders.empty());
    break;
  }
  for (ManagerImpl* m : dropped) m->release();
}

void ManagerImpl::unlink(ArrayImpl* array, bool locked) noexcept {
  if (locked) {
    list_remove(array);
    return;
  }
  std::lock_guard lock(mu_);
  list_remove(array);
}

void ManagerImpl::return_borrowed(const CloseSite* site) {
  struct Ref {
    std::uint32_t slot, generation;
  };
  std::vector<Ref> borrowed;
  {
    std::lock_guard lock(mu_);
    for (ArrayImpl* a = head_; a; a = a->next)
      if (a->borrowed) borrowed.push_back({a->slot, a->generation});
  }
  Registry& reg = Registry::instance();
  for (const Ref& r : borrowed) {
    if (!reg.try_pin(r.slot, r.generation)) continue;
    ArrayImpl& a = *reg.entry(r.slot).impl.load(std::memory_order_acquire);
    ManagerHold lender;
    {
      std::lock_guard meta(a.meta);
      if (a.owner == this && !a.lenders.empty()) {
        lender = ManagerHold(a.lenders.back());
        a.lenders.pop_back();
      }
    }
    bool returned = false;
    if (lender.get() && lender->is_open()) {
      try {
        lender->move_in(a, Join::give_back, "close (returning a temp-attached array)");
        returned = true;
      } catch (const ManagerClosed&) {
        // The lender closed meanwhile: the array closes with this manager.
      }
    }
    if (!returned && lender.get()) reg.request_close(r.slot, r.generation, CloseReason::manager, site, nullptr);
    reg.unpin(r.slot);
  }
}

namespace {

std::string describe_destroyed(const void* context) {
  const auto& m = *static_cast<const ManagerImpl*>(context);
  const Site& s = m.creation_site();
  std::string created = s.line() ? fmt::format(" (created at {}:{})", s.file_name(), s.line()) : std::string();
  return fmt::format("when NDManager '{}'{} was destroyed", m.path(), created);
}

}  // namespace

void ManagerImpl::close_destroyed() {
  const CloseSite site{nullptr, &describe_destroyed, this};
  close(&site);
}

void ManagerImpl::close(const CloseSite* site) {
  if (is_system())
    throw InvalidArgument("close: the system manager is the root of every manager and cannot be closed");
  std::vector<ManagerImpl*> kids;
  {
    std::lock_guard lock(mu_);
    if (closed_.load(std::memory_order_relaxed)) return;
    closed_.store(true, std::memory_order_release);
    kids.swap(children_);
  }
  for (ManagerImpl* k : kids) {
    k->close(site);
    k->release();
  }
  return_borrowed(site);
  {
    std::lock_guard lock(mu_);
    Registry& reg = Registry::instance();
    for (ArrayImpl* a = head_; a;) {
      ArrayImpl* next = a->next;  // `a` may be finalized (and unlinked) right here
      reg.request_close(a->slot, a->generation, CloseReason::manager, site, this);
      a = next;
    }
  }
  if (parent_) parent_->forget_child(this);
}

std::size_t ManagerImpl::array_count() const {
  std::lock_guard lock(mu_);
  return count_;
}

std::size_t ManagerImpl::child_count() const {
  std::lock_guard lock(mu_);
  return children_.size();
}

std::uint64_t ManagerImpl::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

std::vector<ManagerHold> ManagerImpl::children() const {
  std::lock_guard lock(mu_);
  std::vector<ManagerHold> out;
  out.reserve(children_.size());
  for (ManagerImpl* c : children_) {
    c->retain();
    out.emplace_back(c);
  }
  return out;
}

std::uint32_t handle_count_of(const ArrayImpl& array) noexcept {
  Key* key = reveal<Key>(Registry::instance().entry(array.slot).key.load(std::memory_order_acquire));
  return key ? key->strong.load(std::memory_order_relaxed) : 0;
}

void ManagerImpl::collect_arrays(std::vector<NDArray>& out, bool recursive) const {
  {
    std::lock_guard lock(mu_);
    Registry& reg = Registry::instance();
    for (ArrayImpl* a = head_; a; a = a->next) {
      NDArray h = try_handle(reveal<Key>(reg.entry(a->slot).key.load(std::memory_order_acquire)));
      if (h.defined()) out.push_back(std::move(h));
    }
  }
  if (recursive)
    for (const ManagerHold& c : children()) c->collect_arrays(out, true);
}

}  // namespace ndgc::detail
