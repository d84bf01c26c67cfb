// The --compare chart as hand-written SVG: panels side by side, epoch
// duration (s) and host MiB in use at the end of each epoch, and, when a run
// is on a GPU, the GPU's MiB allocated; one polyline per configuration with a
// dot per epoch, axes with ticks and labels, and a legend. Opens in any
// browser; needs no other tool.
//
// Each polyline carries data-config="<config>" and data-panel="seconds",
// "memory" or "gpu", so tests (and scripts) can find them.
#pragma once

#include <string>
#include <vector>

#include "results.hpp"

namespace ndgc::train_tool {

std::string render_chart(const std::vector<RunResult>& runs, const std::string& title);

// Nice tick values covering [low, high]: steps of 1, 2 or 5 × 10^k, about
// `count` of them (for the axes; exposed for tests).
std::vector<double> nice_ticks(double low, double high, int count = 5);

// Text with &, <, >, " and ' escaped for XML.
std::string xml_escape(const std::string& text);

}  // namespace ndgc::train_tool
