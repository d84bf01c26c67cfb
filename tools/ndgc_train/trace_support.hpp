// The trace detector, when this program links ndgc::trace (docs/design.md §7,
// ndgc-train-trace); stubs otherwise, so the rest of ndgc-train needs no #if.
// ndgc-train itself does not link it (tools/CMakeLists.txt says why) and
// hands --autoclose trace runs to ndgc-train-trace, found beside it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "results.hpp"

namespace ndgc::train_tool {

bool trace_linked() noexcept;
// The ndgc-train-trace program beside this one, or empty (not built, or this
// is it).
std::string trace_program();
// Whether --autoclose trace can run: linked here, or beside.
inline bool trace_available() { return trace_linked() || !trace_program().empty(); }
// Replaces this process by trace_program() with the same arguments; returns
// only when that fails, with what went wrong.
std::string exec_trace_program(char** argv);
// A full collection and a drain, then the leaked handles by creation site
// (empty without the detector).
std::vector<TraceLeak> collect_trace_leaks();
// Boehm's heap size (0 without the detector).
std::uint64_t trace_heap_bytes() noexcept;

}  // namespace ndgc::train_tool
