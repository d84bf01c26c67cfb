// Managers: a tree that owns every native buffer (docs/design.md §4, DJL semantics).
//
//   NDManager base = NDManager::new_base_manager("app");   // a child of the system manager
//   NDArray w = base.random_normal({784, 10});
//   {
//     NDManager step = base.new_sub_manager("step");
//     NDArray h = step.ones({32, 784}).matmul(w);           // joins step: h is its first input's
//     w2 = step.ret(h.sum({0}));                           // moves the result to base
//   }                                                      // step closes: h's buffer is freed
//
// NDManager owns a manager and closes it when destroyed; ManagerRef is a
// copyable, non-owning reference (what NDArray::manager() returns). Through a
// ManagerRef to a closed manager, every call but is_open(), name() and uid()
// throws ManagerClosed. All calls are thread-safe.
//
// Closing a manager closes its sub-managers first, then every array it owns,
// whatever handles remain (those throw ArrayClosed afterwards); arrays it
// borrowed through temp_attach go back to their owner instead. close() is
// idempotent. The system manager is the root and cannot be closed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "ndgc/device.hpp"
#include "ndgc/dtype.hpp"
#include "ndgc/ndarray.hpp"
#include "ndgc/shape.hpp"
#include "ndgc/uuid.hpp"

namespace ndgc {

class NDList;
class NDManager;
namespace detail {
class ManagerImpl;
}

class ManagerRef {
 public:
  ManagerRef() noexcept = default;  // refers to nothing; is_open() is false
  ManagerRef(const ManagerRef& other) noexcept;
  ManagerRef(ManagerRef&& other) noexcept : impl_(other.impl_) { other.impl_ = nullptr; }
  ManagerRef& operator=(ManagerRef other) noexcept {
    std::swap(impl_, other.impl_);
    return *this;
  }
  ~ManagerRef();

  bool defined() const noexcept { return impl_ != nullptr; }
  bool same(const ManagerRef& other) const noexcept { return impl_ == other.impl_; }
  std::string name() const;
  void set_name(std::string name);
  Uuid uid() const;
  Device device() const;
  // The parent manager; an empty ref for the system manager.
  ManagerRef parent() const;
  bool is_open() const noexcept;
  bool is_system() const noexcept;
  // Closes the manager (see the top of this file). Idempotent; InvalidArgument
  // for the system manager.
  void close(Site site = Site::current());
  // Further attachment throws ManagerCapped: new arrays, op outputs joining
  // this manager, attach and temp_attach. Sub-managers and arrays returned to
  // it by a sub-manager's ret() are exempt. Useful to find where a leak joins.
  void cap();
  bool is_capped() const;

  // A child of this manager, on this manager's device or on `device` (DJL's
  // newSubManager(device)). `site` names it in close-site messages.
  [[nodiscard]] NDManager new_sub_manager(std::string name = "", Site site = Site::current());
  [[nodiscard]] NDManager new_sub_manager(Device device, Site site = Site::current());
  [[nodiscard]] NDManager new_sub_manager(std::string name, Device device, Site site = Site::current());

  // Moves `array` into this manager / lends it (NDArray::attach, temp_attach).
  // temp_attach to the system manager throws InvalidArgument: it never
  // closes, so the array would never go back.
  void attach(const NDArray& array);
  void temp_attach(const NDArray& array);
  // The same for every array of `arrays` (DJL's attachAll / tempAttachAll).
  // The manager is checked first (ManagerClosed, ManagerCapped, the system
  // manager for temp_attach_all), so a refused call moves nothing.
  void attach_all(const NDList& arrays);
  void temp_attach_all(const NDList& arrays);
  // Attaches `array` to this manager's parent and returns it: how a result
  // outlives a sub-manager. Exempt from the parent's cap().
  NDArray ret(const NDArray& array);
  NDList ret(const NDList& arrays);

  // Arrays and sub-managers this manager holds directly (DJL's resources).
  std::size_t resource_count() const;
  // Arrays this manager holds directly, orphans included.
  std::size_t array_count() const;
  // Handles to the arrays of this manager and its sub-managers that some
  // handle still reaches (orphans cannot be handed out again: they are what
  // auto-close and gc::sweep() close).
  NDList managed_arrays() const;
  std::vector<ManagerRef> sub_managers() const;
  // The tree below this manager; `detailed` lists every array.
  void debug_dump(std::ostream& out, bool detailed = false) const;
  std::string debug_dump(bool detailed = false) const;

  // ---- factories (the array joins this manager, on its device) -------------
  NDArray zeros(const Shape& shape, DataType dtype = DataType::float32, Site site = Site::current()) const;
  NDArray ones(const Shape& shape, DataType dtype = DataType::float32, Site site = Site::current()) const;
  NDArray full(const Shape& shape, double value, DataType dtype = DataType::float32,
               Site site = Site::current()) const;
  // [start, stop) in steps of `step`.
  NDArray arange(double start, double stop, double step = 1, DataType dtype = DataType::float32,
                 Site site = Site::current()) const;
  // `num` evenly spaced values from start to stop inclusive.
  NDArray linspace(double start, double stop, std::int64_t num, DataType dtype = DataType::float32,
                   Site site = Site::current()) const;
  // Identity matrix, n×n (or n×m).
  NDArray eye(std::int64_t n, DataType dtype = DataType::float32, Site site = Site::current()) const;
  NDArray eye(std::int64_t n, std::int64_t m, DataType dtype = DataType::float32,
              Site site = Site::current()) const;
  // Seeded through set_random_seed: reproducible.
  NDArray random_uniform(const Shape& shape, double low = 0, double high = 1,
                         DataType dtype = DataType::float32, Site site = Site::current()) const;
  NDArray random_normal(const Shape& shape, double mean = 0, double stddev = 1,
                        DataType dtype = DataType::float32, Site site = Site::current()) const;
  // An array holding `values` with `shape` (default: 1-D). The element type gives the dtype.
  template <class T>
  NDArray create(std::span<const T> values, const Shape& shape, Site site = Site::current()) const {
    return create_raw(values.data(), dtype_of<T>, values.size(), shape, site);
  }
  template <class T>
  NDArray create(std::span<const T> values, Site site = Site::current()) const {
    return create_raw(values.data(), dtype_of<T>, values.size(), Shape{std::int64_t(values.size())}, site);
  }
  template <class T>
  NDArray create(const std::vector<T>& values, const Shape& shape, Site site = Site::current()) const {
    return create(std::span<const T>(values), shape, site);
  }
  template <class T>
  NDArray create(const std::vector<T>& values, Site site = Site::current()) const {
    return create(std::span<const T>(values), site);
  }
  // A scalar (shape ()).
  template <class T>
  NDArray create_scalar(T value, Site site = Site::current()) const {
    return create_raw(&value, dtype_of<T>, 1, Shape{}, site);
  }
  NDArray create_raw(const void* data, DataType dtype, std::size_t count, const Shape& shape,
                     Site site = Site::current()) const;

  // Implementation access for the library's own layers.
  detail::ManagerImpl* impl() const noexcept { return impl_; }
  explicit ManagerRef(detail::ManagerImpl* impl) noexcept;  // adds a reference

 protected:
  detail::ManagerImpl* impl_ = nullptr;
};

// An owning manager: move-only, closed when destroyed.
class NDManager : public ManagerRef {
 public:
  NDManager() noexcept = default;
  NDManager(const NDManager&) = delete;
  NDManager& operator=(const NDManager&) = delete;
  NDManager(NDManager&& other) noexcept = default;
  NDManager& operator=(NDManager&& other) noexcept;
  ~NDManager();

  // The root of the tree: never closed; detached arrays live here.
  static ManagerRef system();
  // A new child of the system manager.
  [[nodiscard]] static NDManager new_base_manager(std::string name = "", Device device = Device::cpu(),
                                                  Site site = Site::current());

  // Gives up ownership: the manager stays open until closed through a
  // ManagerRef or by its parent.
  ManagerRef release() noexcept;

 private:
  friend class ManagerRef;
  explicit NDManager(detail::ManagerImpl* adopted) noexcept;
};

}  // namespace ndgc
