// The built-in training listeners: epoch timing, memory per epoch and every
// N steps (CSV), progress lines.
#include <ostream>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/gc.hpp"
#include "ndgc/memory.hpp"
#include "ndgc/training.hpp"

namespace ndgc::training {
namespace {

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Arrays held by `m` and every manager below it.
std::size_t arrays_below(const ManagerRef& m) {
  std::size_t n = m.array_count();
  for (const ManagerRef& child : m.sub_managers()) n += arrays_below(child);
  return n;
}

// Creates (truncates) `path` and writes the header line; DataError naming
// `who` and the file when it cannot.
void open_csv(std::ofstream& out, const std::filesystem::path& path, const char* header, const char* who) {
  out.close();
  out.open(path, std::ios::trunc);
  if (!out) throw DataError(fmt::format("{}: cannot create {}", who, path.string()));
  out << header << '\n';
  out.flush();
}

}  // namespace

void EpochTimingListener::on_epoch_begin(Trainer&, std::int64_t) { start_ = std::chrono::steady_clock::now(); }
void EpochTimingListener::on_epoch_end(Trainer&, std::int64_t) { seconds_.push_back(since(start_)); }

const char* MemoryListener::csv_header() noexcept {
  return "epoch,seconds,host_bytes,host_peak_bytes,model_arrays,trainer_arrays,reclaimed,reclaimed_bytes,gpu_bytes,"
         "gpu_reserved_bytes,gpu_peak_bytes";
}

void MemoryListener::on_training_begin(Trainer&) {
  rows_.clear();
  if (!path_.empty()) open_csv(out_, path_, csv_header(), "MemoryListener");
}

void MemoryListener::on_epoch_begin(Trainer& trainer, std::int64_t) {
  memory::reset_peak(Device::cpu());
  if (!trainer.device().is_cpu()) memory::reset_peak(trainer.device());
  start_ = std::chrono::steady_clock::now();
}

void MemoryListener::on_epoch_end(Trainer& trainer, std::int64_t epoch) {
  Row row;
  row.epoch = epoch;
  row.seconds = since(start_);
  const memory::Stats host = memory::stats(Device::cpu());
  row.host_bytes = host.current_bytes;
  row.host_peak_bytes = host.peak_bytes;
  row.model_arrays = trainer.model().manager().array_count();
  row.trainer_arrays = arrays_below(trainer.manager());
  const gc::Stats gcs = gc::stats();
  row.reclaimed = gcs.reclaimed;
  row.reclaimed_bytes = gcs.reclaimed_bytes;
  if (!trainer.device().is_cpu()) {
    const memory::Stats gpu = memory::stats(trainer.device());
    row.gpu_bytes = gpu.current_bytes;
    row.gpu_reserved_bytes = gpu.reserved_bytes;
    row.gpu_peak_bytes = gpu.peak_bytes;
  }
  rows_.push_back(row);
  if (out_.is_open()) {
    out_ << fmt::format("{},{:.6f},{},{},{},{},{},{},{},{},{}\n", row.epoch, row.seconds, row.host_bytes,
                        row.host_peak_bytes, row.model_arrays, row.trainer_arrays, row.reclaimed, row.reclaimed_bytes,
                        row.gpu_bytes, row.gpu_reserved_bytes, row.gpu_peak_bytes);
    out_.flush();
  }
}

MemoryTimelineListener::MemoryTimelineListener(std::int64_t every_steps, std::filesystem::path csv)
    : every_(every_steps), path_(std::move(csv)) {
  if (every_steps < 1)
    throw InvalidArgument(fmt::format("MemoryTimelineListener: every_steps is {}; record every 1 or more steps",
                                      every_steps));
}

const char* MemoryTimelineListener::csv_header() noexcept { return "epoch,step,host_bytes,gpu_bytes,gpu_reserved_bytes"; }

void MemoryTimelineListener::on_training_begin(Trainer&) {
  rows_.clear();
  steps_ = 0;
  if (!path_.empty()) open_csv(out_, path_, csv_header(), "MemoryTimelineListener");
}

void MemoryTimelineListener::on_batch_end(Trainer& trainer, const BatchResult& result) {
  if (!result.training || ++steps_ % every_ != 0) return;
  Row row;
  row.epoch = result.epoch;
  row.step = steps_;
  row.host_bytes = memory::stats(Device::cpu()).current_bytes;
  if (!trainer.device().is_cpu()) {
    const memory::Stats gpu = memory::stats(trainer.device());
    row.gpu_bytes = gpu.current_bytes;
    row.gpu_reserved_bytes = gpu.reserved_bytes;
  }
  rows_.push_back(row);
  if (out_.is_open()) {
    out_ << fmt::format("{},{},{},{},{}\n", row.epoch, row.step, row.host_bytes, row.gpu_bytes, row.gpu_reserved_bytes);
  }
}

// Written as rows come, flushed once an epoch (not a write per step).
void MemoryTimelineListener::on_epoch_end(Trainer&, std::int64_t) {
  if (out_.is_open()) out_.flush();
}

void MemoryTimelineListener::on_training_end(Trainer&) {
  if (out_.is_open()) out_.flush();
}

void ProgressListener::on_epoch_begin(Trainer&, std::int64_t) { start_ = std::chrono::steady_clock::now(); }

void ProgressListener::on_epoch_end(Trainer& trainer, std::int64_t epoch) {
  std::string line = fmt::format("epoch {}: {:.2f} s", epoch, since(start_));
  if (!trainer.history().empty())
    for (const auto& [name, value] : trainer.history().back()) line += fmt::format(", {} {:.4f}", name, value);
  out_ << line << std::endl;
}

}  // namespace ndgc::training
