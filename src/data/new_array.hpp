// New arrays filled on the host, for the readers of the data layer.
//
// A reader that already holds its bytes in memory (a decoded file) writes
// them straight into a new array's buffer: one pass, no staging copy and no
// element-by-element access through handles. The array is built privately
// and published only after `fill` returned (core/publish.hpp), so a fill that
// throws leaves nothing in the manager and its buffer goes back to the
// allocator. Off the CPU, the bytes are staged on the host and copied with
// the engine's from_host.
//
// Thread-safety: as the factories (any thread; the manager may be shared).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "core/publish.hpp"
#include "ndgc/error.hpp"
#include "ndgc/manager.hpp"
#include "ops/op_support.hpp"

namespace ndgc::data::detail {

// The open manager behind `manager`; InvalidArgument for an empty ref,
// ManagerClosed for a closed one.
inline ndgc::detail::ManagerImpl& open_manager(const ManagerRef& manager, const char* op) {
  ndgc::detail::ManagerImpl* m = manager.impl();
  if (!m) throw InvalidArgument(fmt::format("{}: the ManagerRef is empty (default-constructed or moved-from)", op));
  m->check_open(op);
  return *m;
}

// An array of `manager` with `shape` and `dtype` whose contiguous row-major
// bytes `fill(void* data)` writes.
template <class Fill>
NDArray new_host_filled(const ManagerRef& manager, const Shape& shape, DataType dtype, Site site, const char* op,
                        Fill&& fill) {
  ndgc::detail::enter();
  ndgc::detail::ManagerImpl& m = open_manager(manager, op);
  std::unique_ptr<ndgc::detail::ArrayImpl> out = ops::new_output(shape, dtype, m.device(), site, op);
  if (out->size() > 0) {
    if (m.device().is_cpu()) {
      fill(out->data());
    } else {
      std::vector<std::byte> staging(out->nbytes());
      fill(static_cast<void*>(staging.data()));
      ops::engine(m.device()).from_host(ops::contiguous_view(staging.data(), dtype, shape), ops::view_of(*out));
    }
  }
  return ndgc::detail::publish(std::move(out), m, ndgc::detail::Join::create, op);
}

// Closes an array on scope exit unless release()d: a multi-array load that
// fails halfway leaves nothing behind (with auto-close off a dropped handle
// alone would not free it).
class CloseUnlessReleased {
 public:
  explicit CloseUnlessReleased(NDArray array) noexcept : array_(std::move(array)) {}
  CloseUnlessReleased(const CloseUnlessReleased&) = delete;
  CloseUnlessReleased& operator=(const CloseUnlessReleased&) = delete;
  ~CloseUnlessReleased() {
    if (array_.defined()) {
      try {
        array_.close();
      } catch (...) {  // already closed with its manager: nothing left to free
      }
    }
  }
  NDArray& get() noexcept { return array_; }
  NDArray release() noexcept { return std::move(array_); }

 private:
  NDArray array_;
};

}  // namespace ndgc::data::detail
