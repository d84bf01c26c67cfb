// Metrics (src/serving/metrics.hpp): label values escaped as Prometheus's
// text format says (backslash, double quote, line feed; nothing else), not
// as JSON strings.
#include <doctest/doctest.h>

#include <string>

#include "serving/metrics.hpp"

namespace ndgc::serving {

TEST_CASE("prometheus_label_value: backslash, quote and line feed escaped; tabs, controls and UTF-8 as they are") {
  CHECK(prometheus_label_value("fashion") == "\"fashion\"");
  CHECK(prometheus_label_value("a\\b") == "\"a\\\\b\"");
  CHECK(prometheus_label_value("say \"hi\"") == "\"say \\\"hi\\\"\"");
  CHECK(prometheus_label_value("two\nlines") == "\"two\\nlines\"");
  CHECK(prometheus_label_value("tab\there") == "\"tab\there\"");              // JSON would write \t
  CHECK(prometheus_label_value("bell\x07") == "\"bell\x07\"");                // JSON would write \u0007
  CHECK(prometheus_label_value("caf\xc3\xa9/\xe6\xa8\xa1") == "\"caf\xc3\xa9/\xe6\xa8\xa1\"");
}

TEST_CASE("Metrics::render: a model's label is Prometheus-escaped") {
  Metrics m;
  m.add_model("we\"ird\\name\tx", 4, Device::cpu());
  const std::string text = m.render();
  CHECK(text.find("ndgc_pending_requests{model=\"we\\\"ird\\\\name\tx\"} 0") != std::string::npos);
}

}  // namespace ndgc::serving
