// What ndgc-train prints after its runs: the table, the summary, the leak
// report of the auto-close-off run (the creation sites that grew from the end
// of the first epoch to the end of the last: debug::Diff::growing), and the
// trace detector's leaked handles.
#pragma once

#include <string>
#include <vector>

#include "results.hpp"

namespace ndgc::train_tool {

// The leak report of one run: empty when nothing grew (or one epoch only).
// Groups in workspaces come after it, as "Kept in workspaces": their
// workspace, not a manager, frees them.
std::string format_leak_report(const RunResult& run, std::size_t max_groups = 10);

std::string format_report(const std::vector<RunResult>& runs);

}  // namespace ndgc::train_tool
