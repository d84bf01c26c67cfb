// report.html: the report page (ndgc/report.hpp) of ndgc-train's runs. Each
// configuration is a run of the page; under mpirun each rank is one (rank 0
// with its timeline, snapshots and tree, the others with their epochs and
// growth), so the page's selector picks a rank.
#pragma once

#include <string>
#include <vector>

#include "results.hpp"

namespace ndgc::train_tool {

// The report document (src/report/page/SCHEMA.md) of `runs`.
std::string report_document(const std::vector<RunResult>& runs, const std::string& title);

}  // namespace ndgc::train_tool
