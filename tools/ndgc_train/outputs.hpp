// The files ndgc-train leaves in --out: <stem>.csv, <stem>.json,
// <stem>.svg and report.html for the runs given (results.hpp, svg_chart.hpp,
// report_page.hpp).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "results.hpp"

namespace ndgc::train_tool {

// Returns the paths written. DataError when a file cannot be written.
std::vector<std::filesystem::path> write_outputs(const std::vector<RunResult>& runs, const std::filesystem::path& dir,
                                                 const std::string& stem, const std::string& title);

// <dir>/report.html alone; returns its path.
std::filesystem::path write_report(const std::vector<RunResult>& runs, const std::filesystem::path& dir,
                                   const std::string& title);

}  // namespace ndgc::train_tool
