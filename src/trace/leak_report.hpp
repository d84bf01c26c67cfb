// The leak report: leaked handles grouped by their arrays' creation sites.
#pragma once

#include "core/key.hpp"

namespace ndgc::trace::detail {

// Adds the array of a leaked key (if it is still open) to the report. From
// the drain; never throws (a failed insert loses one line of the report).
void record_leak(const ndgc::detail::Key& key) noexcept;

}  // namespace ndgc::trace::detail
