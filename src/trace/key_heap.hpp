// Keys on the collector's heap. See Note [Keys under the collector] in key_heap.cpp.
#pragma once

#include "core/key.hpp"

namespace ndgc::trace::detail {

// Installed as core's key heap at start-up, for good: keys made while the
// detector is off come from the ordinary heap, as without it.
extern const ndgc::detail::KeyHeap kTraceKeyHeap;

}  // namespace ndgc::trace::detail
