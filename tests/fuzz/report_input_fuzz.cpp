// Fuzzes what ndgc-report reads and the page it writes (ndgc::report,
// src/report/): any bytes are either a snapshot or a dump, made into a report
// document and its page, or a DataError; nothing else, no crash, no hang,
// nothing allocated afterwards. A document that was made always becomes a
// page whose data cannot end its script element. See fuzz_util.hpp.
#include <cstdint>
#include <string>

#include <ndgc/report.hpp>

#include "fuzz_util.hpp"

using namespace ndgc;

namespace {

void check_page(const std::string& document) {
  const std::string html = report::page(document);
  // The data sits between these two; the escapes keep any "</script" out of it.
  const std::size_t start = html.find("id=\"ndgc-data\">");
  fuzz::expect(start != std::string::npos, "the page has no data element");
  const std::size_t end = html.find("</script>", start);
  fuzz::expect(end != std::string::npos && html.find('<', start + 15) == end, "the data holds a '<'");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::Balance balance;
  try {
    const debug::Snapshot s = debug::Snapshot::from_json(text);
    check_page(report::document_from_snapshots({s, s}, {"a", "<b>"}, "fuzz"));
  } catch (const DataError&) {
  }
  try {
    const debug::Dump d = debug::Dump::from_json(text);
    check_page(report::document_from_dump(d, "</script>", "fuzz"));
  } catch (const DataError&) {
  }
  balance.check("report_input_fuzz");
  return 0;
}
