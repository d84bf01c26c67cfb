// The order of every report grouped by creation site (orphans(),
// leaked_handles(), reclaimed()): most bytes first, then most arrays, then by
// file and line, so equal groups come out the same way every time.
#pragma once

#include <algorithm>
#include <tuple>
#include <vector>

#include "ndgc/debug.hpp"

namespace ndgc::debug::detail {

inline void sort_largest_first(std::vector<OrphanGroup>& groups) {
  std::sort(groups.begin(), groups.end(), [](const OrphanGroup& a, const OrphanGroup& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.arrays != b.arrays) return a.arrays > b.arrays;
    return std::tie(a.site.file, a.site.line) < std::tie(b.site.file, b.site.line);
  });
}

}  // namespace ndgc::debug::detail
