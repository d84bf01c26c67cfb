// Metrics (src/serving/metrics.hpp): label values escaped as Prometheus's
// text format says (backslash, double quote, line feed; nothing else), not
// as JSON strings; the array series without a walk on the scraping thread.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>

#include <ndgc/debug.hpp>
#include <ndgc/ndgc.hpp>

#include "serving/metrics.hpp"
#include "serving/orphan_sampler.hpp"

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

namespace ndgc::serving {

// Note [Counting orphans off the I/O threads].
TEST_CASE("OrphanSampler: the first read waits for a sample; later reads within the interval take none") {
  NDManager m = NDManager::new_base_manager("sampled");
  OrphanSampler sampler(std::chrono::hours(1));
  const std::uint64_t before = sampler.latest();
  CHECK(sampler.samples() == 1);
  (void)m.zeros({3});  // an orphan: its only handle died (auto-close is off)
  (void)m.zeros({3});
  CHECK(sampler.latest() == before);  // within the interval: the old sample, no new walk
  CHECK(sampler.samples() == 1);
}

TEST_CASE("OrphanSampler: past the interval a read asks for a fresh sample, which counts new orphans") {
  NDManager m = NDManager::new_base_manager("sampled");
  OrphanSampler sampler(std::chrono::milliseconds(1));
  const std::uint64_t before = sampler.latest();
  (void)m.zeros({3});
  (void)m.zeros({3});
  std::uint64_t now = before;
  for (int spin = 0; spin < 2000 && now != before + 2; ++spin) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    now = sampler.latest();
  }
  CHECK(now == before + 2);
  CHECK(sampler.samples() >= 2);
}

TEST_CASE("Metrics::render: live arrays read fresh at every scrape, from a counter") {
  NDManager m = NDManager::new_base_manager("counted");
  Metrics metrics;
  const std::uint64_t live = debug::live_array_count();
  CHECK(metrics.render().find("\nndgc_live_arrays " + std::to_string(live) + "\n") != std::string::npos);
  NDArray a = m.zeros({2}), b = m.zeros({2});
  CHECK(debug::live_array_count() == live + 2);
  CHECK(metrics.render().find("\nndgc_live_arrays " + std::to_string(live + 2) + "\n") != std::string::npos);
}

}  // namespace ndgc::serving
