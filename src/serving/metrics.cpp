// Metrics (metrics.hpp): histograms, counters and the scrape-time readings of
// ndgc's memory accounting, rendered as Prometheus text.
#include "serving/metrics.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ndgc/debug.hpp"
#include "ndgc/gc.hpp"
#include "ndgc/memory.hpp"
#include "serving/kserve_codec.hpp"

namespace ndgc::serving {
namespace {

// Seconds, 50 µs to 10 s: the server's overhead is tens of µs (issue 28's figures).
std::vector<double> latency_bounds() {
  return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

std::vector<double> batch_bounds(std::int64_t max) {
  std::vector<double> b;
  for (std::int64_t v = 1; v < max; v *= 2) b.push_back(double(v));
  b.push_back(double(std::max<std::int64_t>(max, 1)));
  return b;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

// One series without per-model or per-device labels.
template <class V>
void gauge(std::string& out, const char* name, const char* type, const char* help, V value, const char* labels = "") {
  header(out, name, type, help);
  fmt::format_to(std::back_inserter(out), "{}{} {}\n", name, labels, value);
}

}  // namespace

std::string prometheus_label_value(std::string_view value) {
  // The text format escapes exactly three characters in a label value:
  // backslash, double quote and line feed. Everything else, control
  // characters and UTF-8 included, stands as it is (JSON's \u escapes would
  // be read as literal text).
  std::string out = "\"";
  for (const char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out + '"';
}

namespace {

std::string label(const std::string& model) { return "model=" + prometheus_label_value(model); }

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<std::uint64_t>[bounds_.size() + 1]) {
  for (std::size_t i = 0; i <= bounds_.size(); ++i) counts_[i] = 0;
}

void Histogram::observe(double value) noexcept {
  std::size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(std::uint64_t(std::llround(std::max(0.0, value) * 1e6)), std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    fmt::format_to(std::back_inserter(out), "{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, bounds_[i], cumulative);
  }
  cumulative += counts_[bounds_.size()].load(std::memory_order_relaxed);
  fmt::format_to(std::back_inserter(out), "{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, cumulative);
  fmt::format_to(std::back_inserter(out), "{}_sum{{{}}} {}\n", name, labels,
                 double(sum_micros_.load(std::memory_order_relaxed)) / 1e6);
  fmt::format_to(std::back_inserter(out), "{}_count{{{}}} {}\n", name, labels, cumulative);
}

ModelMetrics::ModelMetrics(std::int64_t max_batch_size)
    : queue_seconds(latency_bounds()),
      compute_seconds(latency_bounds()),
      total_seconds(latency_bounds()),
      batch_size(batch_bounds(max_batch_size)) {}

ModelMetrics& Metrics::add_model(const std::string& name, std::int64_t max_batch_size, Device device) {
  if (std::find(devices_.begin(), devices_.end(), device) == devices_.end()) devices_.push_back(device);
  auto& slot = models_[name];
  slot = std::make_unique<ModelMetrics>(max_batch_size);
  return *slot;
}

void Metrics::record_request(const std::string& model, unsigned status) {
  std::lock_guard lock(mutex_);
  ++requests_[{model, status}];
}

OrphanSampler& Metrics::orphan_sampler() const {
  std::call_once(sampler_started_, [this] { sampler_ = std::make_unique<OrphanSampler>(); });
  return *sampler_;
}

std::string Metrics::render() const {
  std::string out;
  render_requests(out);
  render_models(out);
  render_memory(out);
  render_autoclose(out);
  gauge(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", memory::resident_bytes());
  return out;
}

void Metrics::render_requests(std::string& out) const {
  header(out, "ndgc_requests_total", "counter", "HTTP requests answered, by model (empty: server endpoints) and status.");
  std::lock_guard lock(mutex_);
  for (const auto& [key, n] : requests_)
    fmt::format_to(std::back_inserter(out), "ndgc_requests_total{{{},status=\"{}\"}} {}\n", label(key.first),
                   key.second, n);
}

// Triton's counters and the latency histograms, one series per model.
void Metrics::render_models(std::string& out) const {
  auto per_model = [&](const char* name, const char* type, const char* help, auto value) {
    header(out, name, type, help);
    for (const auto& [model, m] : models_) fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", name, label(model), value(*m));
  };
  per_model("ndgc_inference_count_total", "counter", "Rows inferred (Triton's nv_inference_count).",
            [](const ModelMetrics& m) { return m.inferences.load(); });
  per_model("ndgc_inference_exec_count_total", "counter", "Batches run (Triton's nv_inference_exec_count).",
            [](const ModelMetrics& m) { return m.executions.load(); });
  per_model("ndgc_pending_requests", "gauge", "Requests queued or being computed.",
            [](const ModelMetrics& m) { return m.pending.load(); });
  per_model("ndgc_rejected_requests_total", "counter", "Requests refused with 503 because the queue was full.",
            [](const ModelMetrics& m) { return m.rejected.load(); });
  auto histograms = [&](const char* name, const char* help, const Histogram ModelMetrics::*h) {
    header(out, name, "histogram", help);
    for (const auto& [model, m] : models_) ((*m).*h).render(out, name, label(model));
  };
  histograms("ndgc_request_queue_duration_seconds", "Time from decoding to the start of the batch's forward pass.",
             &ModelMetrics::queue_seconds);
  histograms("ndgc_request_compute_duration_seconds", "Time of the batch's forward pass and result split.",
             &ModelMetrics::compute_seconds);
  histograms("ndgc_request_duration_seconds", "Time from the request's arrival to its response.",
             &ModelMetrics::total_seconds);
  histograms("ndgc_batch_size", "Rows per forward pass.", &ModelMetrics::batch_size);
}

// The memory series by device: the CPU's, then each model's GPU.
void Metrics::render_memory(std::string& out) const {
  std::vector<std::pair<std::string, memory::Stats>> devices;
  for (Device d : devices_) devices.emplace_back(fmt::format("{{device=\"{}\"}}", device_argument(d)), memory::stats(d));
  auto per_device = [&](const char* name, const char* type, const char* help, auto value) {
    header(out, name, type, help);
    for (const auto& [labels, stats] : devices)
      fmt::format_to(std::back_inserter(out), "{}{} {}\n", name, labels, value(stats));
  };
  per_device("ndgc_memory_bytes_in_use", "gauge", "Bytes of arrays in use, by device.",
             [](const memory::Stats& m) { return m.current_bytes; });
  per_device("ndgc_memory_peak_bytes", "gauge", "High-water mark of bytes in use, by device.",
             [](const memory::Stats& m) { return m.peak_bytes; });
  per_device("ndgc_memory_reserved_bytes", "gauge", "Bytes held by the device's allocator (in use plus cached).",
             [](const memory::Stats& m) { return m.current_bytes + m.cached_bytes; });
  per_device("ndgc_workspace_bytes", "gauge", "Workspace arena bytes held, by device.",
             [](const memory::Stats& m) { return m.workspace_capacity_bytes; });
  per_device("ndgc_workspace_spilled_bytes_total", "counter", "Bytes workspaces spilled to ordinary memory, by device.",
             [](const memory::Stats& m) { return m.workspace_spilled_bytes; });
}

// Live and orphaned arrays, and what auto-close has done.
void Metrics::render_autoclose(std::string& out) const {
  const gc::Stats gcs = gc::stats();
  gauge(out, "ndgc_live_arrays", "gauge", "Open arrays, every manager.", debug::live_array_count());
  gauge(out, "ndgc_orphan_arrays", "gauge",
        "Open arrays no handle reaches (what auto-close would close), as sampled at most a second before.",
        orphan_sampler().latest());
  const char* detector = !gc::enabled() ? "{detector=\"off\"}"
                         : gc::detector() == gc::Detector::trace ? "{detector=\"trace\"}"
                                                                 : "{detector=\"refcount\"}";
  gauge(out, "ndgc_autoclose_info", "gauge", "Auto-close's detector: off, refcount (--autoclose on) or trace.", 1,
        detector);
  gauge(out, "ndgc_autoclose_reclaimed_arrays_total", "counter", "Arrays auto-close has closed.", gcs.reclaimed);
  gauge(out, "ndgc_autoclose_leaked_handles_total", "counter",
        "Handles the tracing detector (--autoclose trace) found unreachable; their arrays were closed.",
        gcs.leaked_handles);
}

}  // namespace ndgc::serving
