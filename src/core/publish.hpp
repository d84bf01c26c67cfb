// Publishing a new array: the one path from a built ArrayImpl to a handle.
//
// Factories and ops build the ArrayImpl (and compute into it) privately,
// then publish it: the registry entry, the key, the manager's list and the
// innermost NDScope all learn of it at once. Until then nothing can see it,
// so an op that throws halfway leaks nothing and leaves no half-made array
// in a manager.
#pragma once

#include <memory>

#include "core/array_impl.hpp"
#include "core/manager_impl.hpp"
#include "ndgc/ndarray.hpp"

namespace ndgc::detail {

// Throws ManagerClosed / ManagerCapped naming `op`; `impl` is untouched then.
NDArray publish(std::unique_ptr<ArrayImpl> impl, ManagerImpl& manager, Join how, const char* op);

}  // namespace ndgc::detail
