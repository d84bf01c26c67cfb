// Programs built beside this one: ndgc-train and ndgc-serve hand an
// --autoclose trace run to their -trace twin (the same sources linked with
// ndgc::trace; tools/CMakeLists.txt says why there are two programs).
#pragma once

#include <string>
#include <string_view>

namespace ndgc::tools {

// The executable `name` in this program's directory, or empty when there is
// none (not built, or /proc/self/exe unreadable).
std::string program_beside(std::string_view name);

// Replaces this process by program_beside(name) with the same argv; returns
// only when that fails, with what went wrong.
std::string exec_beside(std::string_view name, char** argv);

}  // namespace ndgc::tools
