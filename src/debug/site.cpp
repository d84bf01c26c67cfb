// SiteInfo: a creation site as plain data, for reports and JSON.
//
// std::source_location holds pointers into the program's static strings and
// cannot be rebuilt from a file, so reports copy the three fields they print.
// Thread-safety: plain values.
#include <fmt/format.h>

#include "ndgc/debug.hpp"

namespace ndgc::debug {

SiteInfo SiteInfo::from(const Site& site) {
  return SiteInfo{site.file_name(), site.line(), site.function_name()};
}

std::string SiteInfo::to_string() const { return fmt::format("{}:{}", file, line); }

}  // namespace ndgc::debug
