// Objects the collector may reclaim: `new NDArray` while the detector is on
// (through core's hooks) and Collectable objects (trace.hpp).
#pragma once

#include <cstddef>

namespace ndgc::trace::detail {

void* new_handle(std::size_t size) noexcept;  // TraceHooks::new_handle
void delete_handle(void* p) noexcept;         // TraceHooks::delete_handle

}  // namespace ndgc::trace::detail
