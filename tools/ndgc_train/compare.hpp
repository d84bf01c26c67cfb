// --compare: each configuration in a fresh child process of this program
// (/proc/self/exe, posix_spawn) with the same options and seed, one after
// the other so their timings do not disturb each other. A child writes its
// RunResult to <out>/run-<config>.json; the parent reads it back.
//
// Fresh processes, because a configuration must not inherit the previous
// one's heap, caches or allocator state: each starts from the same empty
// process, as a user's program would.
#pragma once

#include <string>
#include <vector>

#include "options.hpp"
#include "results.hpp"

namespace ndgc::train_tool {

struct CompareOutcome {
  std::vector<RunResult> runs;        // in the order of `modes`, those that finished
  std::vector<std::string> failures;  // one message per child that did not
};

CompareOutcome run_children(const Options& options, const std::vector<RunMode>& modes);

}  // namespace ndgc::train_tool
