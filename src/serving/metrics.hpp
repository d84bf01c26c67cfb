// The server's Prometheus series (text format 0.0.4), named after Triton's
// and Prometheus's conventions: counters end in _total, durations are
// histograms in seconds, sizes in bytes, every model-level series carries
// model="NAME". Memory series come from ndgc's own accounting at scrape
// time, beside the kernel's process_resident_memory_bytes, so "the heap
// looks fine but the container grows" shows as two diverging lines.
//
// Thread-safety: every record_* may be called from any thread (atomics, and
// one mutex for the status counters); render() takes a consistent-enough
// reading, series by series.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ndgc/device.hpp"
#include "serving/orphan_sampler.hpp"

namespace ndgc::serving {

// `value` as a quoted Prometheus label value (the text exposition format's escaping).
std::string prometheus_label_value(std::string_view value);

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value) noexcept;
  // "name_bucket{labels,le=...} n" lines, then _sum and _count.
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // one per bound, plus +Inf
  std::atomic<std::uint64_t> sum_micros_{0};              // sum in units of 1e-6 (seconds or rows)
  std::atomic<std::uint64_t> count_{0};
};

// One model's series.
struct ModelMetrics {
  explicit ModelMetrics(std::int64_t max_batch_size);
  Histogram queue_seconds, compute_seconds, total_seconds, batch_size;
  std::atomic<std::int64_t> pending{0};
  std::atomic<std::uint64_t> rejected{0};
  std::atomic<std::uint64_t> inferences{0};  // rows answered
  std::atomic<std::uint64_t> executions{0};  // batches run
};

class Metrics {
 public:
  // Before the server starts. The memory series cover the CPU and every
  // model's device.
  ModelMetrics& add_model(const std::string& name, std::int64_t max_batch_size, Device device = Device::cpu());
  // One finished request: model "" for the server's own endpoints.
  void record_request(const std::string& model, unsigned status);
  // The whole text, memory and process series included.
  std::string render() const;

 private:
  void render_requests(std::string& out) const;
  void render_models(std::string& out) const;
  void render_memory(std::string& out) const;
  void render_autoclose(std::string& out) const;
  // Started by the first render (Note [Counting orphans off the I/O threads]).
  OrphanSampler& orphan_sampler() const;
  mutable std::once_flag sampler_started_;
  mutable std::unique_ptr<OrphanSampler> sampler_;
  std::map<std::string, std::unique_ptr<ModelMetrics>> models_;
  std::vector<Device> devices_{Device::cpu()};
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, unsigned>, std::uint64_t> requests_;
};

}  // namespace ndgc::serving
