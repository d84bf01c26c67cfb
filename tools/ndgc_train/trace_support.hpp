// The trace detector, when this program links ndgc::trace (DESIGN.md §8);
// stubs otherwise, so the rest of ndgc-train needs no #if.
#pragma once

#include <cstdint>
#include <vector>

#include "results.hpp"

namespace ndgc::train_tool {

bool trace_linked() noexcept;
// A full collection and a drain, then the leaked handles by creation site
// (empty without the detector).
std::vector<TraceLeak> collect_trace_leaks();
// Boehm's heap size (0 without the detector).
std::uint64_t trace_heap_bytes() noexcept;

}  // namespace ndgc::train_tool
