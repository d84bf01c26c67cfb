// format_table() and format_summary(): fixed-width text, fmt.
#include "table.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ndgc::train_tool {
namespace {

// One column group: "      s      MiB peak MiB   arrays reclaimed    acc", and
// on a GPU "      s      MiB peak MiB  GPU MiB reserved GPU peak   arrays reclaimed    acc".
constexpr int kGroupWidth = 7 + 1 + 8 + 1 + 8 + 1 + 8 + 1 + 9 + 1 + 6;
constexpr int kGpuGroupWidth = kGroupWidth + 3 * (8 + 1);

std::string group_header(bool gpu) {
  return gpu ? fmt::format("{:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>6}", "s", "MiB", "peak MiB", "GPU MiB",
                           "reserved", "GPU peak", "arrays", "reclaimed", "acc")
             : fmt::format("{:>7} {:>8} {:>8} {:>8} {:>9} {:>6}", "s", "MiB", "peak MiB", "arrays", "reclaimed", "acc");
}

std::string group_cells(const EpochRow& e, bool gpu) {
  std::string gpu_cells;
  if (gpu)
    gpu_cells = fmt::format(" {:>8.1f} {:>8.1f} {:>8.1f}", e.gpu_allocated_bytes / kMiB, e.gpu_reserved_bytes / kMiB,
                            e.gpu_peak_bytes / kMiB);
  return fmt::format("{:>7.2f} {:>8.1f} {:>8.1f}{} {:>8} {:>9} {:>6.4f}", e.seconds, e.bytes_in_use / kMiB,
                     e.peak_bytes / kMiB, gpu_cells, e.live_arrays, e.reclaimed, e.test_accuracy);
}

// The row of the epoch a run died in: "  died: OutOfMemory, training step 412 of 1875".
std::string failure_cell(const RunFailure& f, int width) {
  std::string text = fmt::format("  died: {}, {} step {} of {}", f.error, f.phase, f.step, f.steps);
  if (int(text.size()) > width) text.resize(std::size_t(width));
  return text + std::string(std::size_t(width) - text.size(), ' ');
}

std::string centered(const std::string& text, int width) {
  const int pad = std::max(0, width - int(text.size()));
  return std::string(pad / 2, ' ') + text + std::string(pad - pad / 2, ' ');
}

const EpochRow* find_epoch(const RunResult& r, std::int64_t epoch) {
  for (const EpochRow& e : r.epochs)
    if (e.epoch == epoch) return &e;
  return nullptr;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string signed_mib(double mib) { return fmt::format("{}{:.1f} MiB", mib < 0 ? "-" : "+", std::abs(mib)); }

}  // namespace

std::string config_title(const std::string& config) {
  if (config == "off" || config == "on") return "auto-close " + config;
  if (config == "trace") return "auto-close trace";
  return config;
}

std::string format_table(const std::vector<RunResult>& runs) {
  const bool gpu = any_on_gpu(runs);
  const int width = gpu ? kGpuGroupWidth : kGroupWidth;
  std::int64_t epochs = 0;
  for (const RunResult& r : runs) {
    for (const EpochRow& e : r.epochs) epochs = std::max(epochs, e.epoch);
    if (r.failure) epochs = std::max(epochs, r.failure->epoch);
  }
  std::string out = fmt::format("{:>6}", "");
  for (const RunResult& r : runs) {
    const std::string title = config_title(r.config) + (r.precision == "fp32" ? "" : ", " + r.precision);
    out += " | " + centered(title, width);
  }
  out += "\n" + fmt::format("{:>6}", "epoch");
  for (std::size_t i = 0; i < runs.size(); ++i) out += " | " + group_header(gpu);
  out += "\n" + std::string(6, '-');
  for (std::size_t i = 0; i < runs.size(); ++i) out += "-+-" + std::string(std::size_t(width), '-');
  out += "\n";
  for (std::int64_t epoch = 1; epoch <= epochs; ++epoch) {
    out += fmt::format("{:>6}", epoch);
    for (const RunResult& r : runs) {
      if (const EpochRow* e = find_epoch(r, epoch)) out += " | " + group_cells(*e, gpu);
      else if (r.failure && r.failure->epoch == epoch) out += " | " + failure_cell(*r.failure, width);
      else out += " | " + std::string(std::size_t(width), ' ');
    }
    out += "\n";
  }
  return out;
}

std::int64_t baseline_epoch(std::int64_t epochs) noexcept { return epochs >= 3 ? 2 : 1; }

std::string format_summary(const std::vector<RunResult>& runs) {
  std::string out;
  for (const RunResult& r : runs) {
    if (r.epochs.empty()) continue;
    const EpochRow& last = r.epochs.back();
    const EpochRow* base = find_epoch(r, baseline_epoch(last.epoch));
    if (!base) base = &r.epochs.front();
    const double ratio = base->seconds > 0 ? last.seconds / base->seconds : 0;
    // Single epochs are noisy on a shared machine: with six epochs or more,
    // also the median of the last three over the median of epochs 2-4.
    std::string medians;
    if (r.epochs.size() >= 6) {
      const auto& e = r.epochs;
      const double early = median({e[1].seconds, e[2].seconds, e[3].seconds});
      const double late = median({e[e.size() - 3].seconds, e[e.size() - 2].seconds, e[e.size() - 1].seconds});
      medians = fmt::format(" (median of epochs {}-{} / median of epochs 2-4: {:.3f})", last.epoch - 2, last.epoch,
                            early > 0 ? late / early : 0.0);
    }
    std::string gpu;
    if (r.on_gpu())
      gpu = fmt::format(", {} memory {}", r.device,
                        signed_mib((double(last.gpu_allocated_bytes) - double(base->gpu_allocated_bytes)) / kMiB));
    out += fmt::format(
        "{:<17} epoch {} / epoch {} duration {:.3f}{}; from epoch {} to {}: memory {}{}, live arrays {:+}; "
        "test accuracy {:.4f}\n",
        config_title(r.config) + ":", last.epoch, base->epoch, ratio, medians, base->epoch, last.epoch,
        signed_mib((double(last.bytes_in_use) - double(base->bytes_in_use)) / kMiB), gpu,
        std::int64_t(last.live_arrays) - std::int64_t(base->live_arrays), last.test_accuracy);
  }
  return out;
}

}  // namespace ndgc::train_tool
