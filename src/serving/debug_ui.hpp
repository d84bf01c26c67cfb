// GET /v2/debug/ui: the report page (ndgc/report.hpp) in live mode. It opens
// with a snapshot (POST /v2/debug/snapshot, the baseline of every later
// diff), then polls /v2/debug/diff and /metrics once a second and draws the
// requests, live arrays and bytes over time, and the creation sites that grew.
// The page's policy lets it fetch this server only.
#pragma once

#include <string>

namespace ndgc::serving {

// A fresh page (its own nonce) for each request.
std::string debug_ui_page();

}  // namespace ndgc::serving
