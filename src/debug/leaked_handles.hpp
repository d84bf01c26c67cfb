// Recording for debug::leaked_handles(): the trace detector's drain reports
// each array it closes because its handle leaked (docs/design.md §7).
#pragma once

#include "core/array_impl.hpp"

namespace ndgc::debug::detail {

// Adds `array` to the leaked-handles report. The caller holds a pin on it
// (so it is open and its owner fixed under `meta`). Never throws: a failed
// insert loses one line of the report, never the close.
void record_leaked_handle(const ndgc::detail::ArrayImpl& array) noexcept;

}  // namespace ndgc::debug::detail
