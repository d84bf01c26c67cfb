// The report page's files, embedded at build time (embed.cmake): the page's
// own report.html, report.js and report.css, and uPlot's uPlot.iife.min.js
// and uPlot.min.css (third_party/uplot/).
#pragma once

#include <string_view>

namespace ndgc::report {

// The file named `name`, or an empty view when the page has no such file.
std::string_view page_asset(std::string_view name) noexcept;

}  // namespace ndgc::report
