// ManagerImpl: one node of the manager tree (docs/design.md §4).
//
// A manager owns the arrays in its intrusive list and its sub-managers.
// Reference-counted: NDManager, ManagerRef, each array's owner pointer and
// the parent's child list hold references, so the object outlives its close
// for as long as anything can still name it. Closed is a state, not a
// destruction.
//
// Locking: `mu` guards the list, the children and the counters; the name has
// its own spin lock so that path() can be called with any mutex held.
// Lock order: a parent's mutex is never held while taking a child's; two
// managers' mutexes are taken together with std::scoped_lock (deadlock-free).
// No mutex is held while a public entry point drains (Note [Draining at
// entry points]); a finalizer may take `mu` to unlink an array, so code that
// holds `mu` never waits for a pin to go away (Note [Close protocol]).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/array_impl.hpp"
#include "core/key.hpp"
#include "ndgc/device.hpp"
#include "ndgc/uuid.hpp"

namespace ndgc::detail {

class ManagerImpl;
struct Key;

// A counted reference to a ManagerImpl (the library's own ManagerRef).
class ManagerHold {
 public:
  ManagerHold() noexcept = default;
  explicit ManagerHold(ManagerImpl* adopted) noexcept : m_(adopted) {}
  ManagerHold(const ManagerHold& o) noexcept;
  ManagerHold(ManagerHold&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
  ManagerHold& operator=(ManagerHold o) noexcept {
    std::swap(m_, o.m_);
    return *this;
  }
  ~ManagerHold();
  ManagerImpl* get() const noexcept { return m_; }
  ManagerImpl* operator->() const noexcept { return m_; }
  ManagerImpl* release() noexcept { return std::exchange(m_, nullptr); }

 private:
  ManagerImpl* m_ = nullptr;
};

// How an array comes to a manager; decides what cap() allows.
enum class Join : std::uint8_t {
  create,   // a factory or op output
  attach,   // attach()
  borrow,   // temp_attach()
  ret,      // a sub-manager's ret(): exempt from cap
  detach,   // detach() to the system manager: exempt
  give_back // a borrowed array going back to its lender: exempt
};

class ManagerImpl {
 public:
  // A new open manager (reference count 1, owned by the caller); `site`:
  // where the user asked for it (close tracking names it).
  static ManagerImpl* create(std::string name, Device device, ManagerImpl* parent, Site site = Site());
  static ManagerImpl& system() noexcept;

  void retain() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept;

  const Uuid& uid() const noexcept { return uid_; }
  Device device() const noexcept { return device_; }
  const Site& creation_site() const noexcept { return created_; }
  ManagerImpl* parent() const noexcept { return parent_; }
  bool is_system() const noexcept { return parent_ == nullptr; }
  bool is_open() const noexcept { return !closed_.load(std::memory_order_acquire); }
  bool is_capped() const noexcept { return capped_.load(std::memory_order_relaxed); }
  std::string name() const;
  void set_name(std::string name);
  // "system/app/step"
  std::string path() const;

  // Throws ManagerClosed naming `op` when closed.
  void check_open(const char* op) const;
  // `site`: where the close came from, for every array it closes (Note
  // [Close sites] in key.hpp); null for none.
  void close(const CloseSite* site);
  // The close an NDManager's destructor makes: its arrays say "when NDManager
  // '<path>' (created at file:line) was destroyed".
  void close_destroyed();
  void cap() noexcept { capped_.store(true, std::memory_order_relaxed); }
  ManagerImpl* new_child(std::string name, Device device, Site site = Site());

  // Registers a freshly built array and adds it here, atomically with respect
  // to close(); returns its key. Throws ManagerClosed / ManagerCapped.
  Key* link_new(ArrayImpl* array, Join how, const char* op);
  // Moves a pinned array here from its current owner.
  void move_in(ArrayImpl& array, Join how, const char* op);
  // Removes a finalizing array from this manager's list.
  void unlink(ArrayImpl* array, bool locked) noexcept;

  std::size_t array_count() const;
  std::size_t child_count() const;
  std::uint64_t bytes() const;
  std::vector<ManagerHold> children() const;
  // Handles to own arrays that a handle still reaches; `recursive`: and the children's.
  void collect_arrays(std::vector<NDArray>& out, bool recursive) const;
  // Calls f(const ArrayImpl&, std::uint32_t handle_count) for each own array, under `mu`.
  template <class F>
  void for_each_array(F&& f) const;

 private:
  ManagerImpl(std::string name, Device device, ManagerImpl* parent, Site site);
  void list_add(ArrayImpl* a, bool borrowed) noexcept;   // mu held
  void list_remove(ArrayImpl* a) noexcept;               // mu held
  void check_join(Join how, const char* op) const;       // mu held
  void return_borrowed(const CloseSite* site);
  void forget_child(ManagerImpl* child);

  std::atomic<std::int32_t> refs_{1};
  const Uuid uid_;
  const Device device_;
  ManagerImpl* const parent_;  // counted
  const Site created_;
  mutable std::mutex mu_;
  mutable support::SpinLock name_lock_;  // the name alone, so path() works under any mu_
  std::string name_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> capped_{false};
  ArrayImpl* head_ = nullptr;  // intrusive list of own arrays
  std::size_t count_ = 0;
  std::uint64_t bytes_ = 0;
  std::vector<ManagerImpl*> children_;  // counted
};

template <class F>
void ManagerImpl::for_each_array(F&& f) const {
  std::lock_guard lock(mu_);
  for (ArrayImpl* a = head_; a; a = a->next) f(*a);
}

// The handle count of a linked (so open) array.
std::uint32_t handle_count_of(const ArrayImpl& array) noexcept;

}  // namespace ndgc::detail
