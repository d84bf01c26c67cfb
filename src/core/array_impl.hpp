// ArrayImpl: the array itself, as the registry holds it.
//
// Shape, strides (in elements), offset (in elements), dtype and a reference
// to the Storage; so views share the buffer. The layout fields and the site
// are fixed once the array is published. The mutable parts have owners:
//   - name, owner, lenders: `meta` (a spin lock; a few instructions each);
//   - prev/next/borrowed (membership of the owner's list): the owner's mutex.
// An ArrayImpl is only touched while pinned, or under its owner's mutex while
// linked (a linked array cannot be finalized: finalizing unlinks it first).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/storage.hpp"
#include "ndgc/device.hpp"
#include "ndgc/dtype.hpp"
#include "ndgc/ndarray.hpp"
#include "ndgc/shape.hpp"
#include "ndgc/uuid.hpp"
#include "support/spin_lock.hpp"

namespace ndgc::detail {

class ManagerImpl;

// Per-array state a later layer attaches (autograd). Destroyed with the array.
struct ArrayExtension {
  virtual ~ArrayExtension() = default;
};

class ArrayImpl {
 public:
  // A new contiguous array with its own buffer (throws OutOfMemory).
  static std::unique_ptr<ArrayImpl> make(const Shape& shape, DataType dtype, Device device, Site site);
  // A view of `storage`.
  ArrayImpl(const Shape& shape, const Shape& strides, std::int64_t offset, DataType dtype, StorageRef storage,
            Site site);
  ~ArrayImpl();
  // From a per-thread free list (Note [Object free lists] in support/free_list.hpp).
  static void* operator new(std::size_t size);
  static void* operator new(std::size_t, void* where) noexcept { return where; }
  static void operator delete(void* p, std::size_t size) noexcept;

  // ---- fixed after publication --------------------------------------------
  Shape shape;
  Shape strides;
  std::int64_t offset = 0;
  DataType dtype;
  Device device;
  StorageRef storage;
  Site site;
  bool owns_storage = false;  // allocated its buffer (views: false); bytes count toward its manager
  std::uint32_t slot = 0, generation = 0;
  Uuid uuid;

  std::int64_t size() const noexcept { return shape.size(); }
  std::size_t nbytes() const noexcept { return std::size_t(size()) * size_of(dtype); }
  // Bytes this array accounts for in its manager: its buffer if it allocated it.
  std::size_t charged_bytes() const noexcept { return owns_storage ? storage->bytes() : 0; }
  // An empty buffer has no address, and neither has a view of it, whatever its offset (a slice of an
  // empty batch along another axis still advances the offset).
  void* data() const noexcept {
    char* base = static_cast<char*>(storage->data());
    return base == nullptr ? nullptr : base + offset * std::int64_t(size_of(dtype));
  }
  bool is_contiguous() const noexcept;

  // ---- guarded by meta ------------------------------------------------------
  mutable support::SpinLock meta;
  std::string name;
  ManagerImpl* owner = nullptr;          // counted reference
  std::vector<ManagerImpl*> lenders;     // temp_attach: where to return, innermost last (counted)
  std::string get_name() const;
  // The owner, with a reference the caller must release (ManagerHold).
  ManagerImpl* acquire_owner() const;

  // ---- guarded by the owner's mutex -----------------------------------------
  ArrayImpl* prev = nullptr;
  ArrayImpl* next = nullptr;
  bool borrowed = false;  // in the owner's list through temp_attach

  std::unique_ptr<ArrayExtension> extension;  // only while pinned

  // "'w' (uuid, (2, 3), float32)" for messages.
  std::string describe() const;
};

// Contiguous row-major strides for `shape`.
Shape contiguous_strides(const Shape& shape);

}  // namespace ndgc::detail
