// Leaked keys on their way from the collector's finalizers to the reclaim
// queue. See leak_list.cpp.
#pragma once

#include "core/key.hpp"

namespace ndgc::trace::detail {

// From a finalizer: lock-free, allocates nothing. The key carries one strong
// reference (Note [Leaked keys in the reclaim queue]). Wakes the drain.
void push_leaked(ndgc::detail::Key* key) noexcept;

// From the drain (on_wake): records each key's creation site in the leak
// report, then moves it to the reclaim queue, which closes its array.
void forward_leaked() noexcept;

}  // namespace ndgc::trace::detail
