// debug_ui_page(): the live report document and its page.
#include "serving/debug_ui.hpp"

#include <chrono>

#include <fmt/format.h>

#include "ndgc/report.hpp"

namespace ndgc::serving {

std::string debug_ui_page() {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  const std::string document = fmt::format(
      R"({{"format":"ndgc-report","version":1,"title":"ndgc-serve: live memory","source":"live",)"
      R"("created_ms":{},"runs":[],"live":{{"snapshot":"/v2/debug/snapshot","diff":"/v2/debug/diff",)"
      R"("metrics":"/metrics","every_ms":1000}}}})",
      now.count());
  return report::page(document, report::PageKind::live);
}

}  // namespace ndgc::serving
