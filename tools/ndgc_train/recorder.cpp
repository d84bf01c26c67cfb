// EpochRecorder: one EpochRow per epoch, two snapshots for the leak report,
// and where the run is (for a run that dies).
#include "recorder.hpp"

#include <fmt/format.h>

#include <ndgc/gc.hpp>
#include <ndgc/memory.hpp>
#include <ndgc/report.hpp>

namespace ndgc::train_tool {
namespace {

// Arrays held by `m` and every manager below it (orphans included).
std::uint64_t arrays_below(const ManagerRef& m) {
  std::uint64_t n = m.array_count();
  for (const ManagerRef& child : m.sub_managers()) n += arrays_below(child);
  return n;
}

double value_or_zero(const std::map<std::string, double>& h, const char* key) {
  auto it = h.find(key);
  return it == h.end() ? 0.0 : it->second;
}

// Marks the end of a step's listeners (see recorder.hpp).
class StepEndMarker : public training::TrainingListener {
 public:
  explicit StepEndMarker(bool& in_listeners) : in_listeners_(in_listeners) {}
  void on_batch_end(training::Trainer&, const training::BatchResult&) override { in_listeners_ = false; }

 private:
  bool& in_listeners_;
};

// The first line of an error's message.
std::string first_line(const std::string& what) { return what.substr(0, what.find('\n')); }

}  // namespace

void EpochRecorder::on_epoch_begin(training::Trainer&, std::int64_t epoch) {
  // Outside the epochs' times: a snapshot walks every array (~10 ms per 100k).
  if (epoch >= 1) {  // the arrays at the end of the previous epoch
    debug::Snapshot taken = debug::snapshot();
    report_.snapshots.push_back(report::snapshot_entry(taken, fmt::format("end of epoch {}", epoch)));
    if (epoch == 1) first_ = std::move(taken);
  }
  memory::reset_peak(Device::cpu());
  if (!device_.is_cpu()) memory::reset_peak(device_);
  reclaimed_at_start_ = gc::stats().reclaimed;
  epoch_ = epoch;
  trained_ = tested_ = 0;
  in_listeners_ = last_was_test_ = false;
  start_ = std::chrono::steady_clock::now();
}

void EpochRecorder::on_batch_end(training::Trainer&, const training::BatchResult& batch) {
  ++(batch.training ? trained_ : tested_);
  last_was_test_ = !batch.training;
  in_listeners_ = true;
}

std::shared_ptr<training::TrainingListener> EpochRecorder::step_end_marker() {
  return std::make_shared<StepEndMarker>(in_listeners_);
}

RunFailure EpochRecorder::failure(std::string error, const std::string& what) const {
  RunFailure f;
  f.error = std::move(error);
  f.epoch = epoch_ + 1;
  f.message = first_line(what);
  // The step whose listeners were running, or the one after the last that ended.
  const bool testing = in_listeners_ ? last_was_test_ : (tested_ > 0 || (train_steps_ > 0 && trained_ >= train_steps_));
  f.phase = testing ? "test" : "training";
  const std::int64_t ended = testing ? tested_ : trained_;
  f.step = in_listeners_ ? ended : ended + 1;
  f.steps = testing ? test_steps_ : train_steps_;
  return f;
}

void EpochRecorder::on_epoch_end(training::Trainer& trainer, std::int64_t epoch) {
  gc::poll();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const memory::Stats host = memory::stats(Device::cpu());
  const gc::Stats gcs = gc::stats();
  EpochRow row;
  row.epoch = epoch + 1;
  row.seconds = seconds;
  row.bytes_in_use = host.current_bytes;
  row.peak_bytes = host.peak_bytes;
  row.live_arrays = arrays_below(trainer.model().manager());
  row.reclaimed = gcs.reclaimed - reclaimed_at_start_;
  row.leaked_handles = gcs.leaked_handles;
  if (!device_.is_cpu()) {
    const memory::Stats gpu = memory::stats(device_);
    row.gpu_allocated_bytes = gpu.current_bytes;
    row.gpu_reserved_bytes = gpu.reserved_bytes;
    row.gpu_peak_bytes = gpu.peak_bytes;
  }
  if (!trainer.history().empty()) {
    row.train_loss = value_or_zero(trainer.history().back(), "train_loss");
    row.test_accuracy = value_or_zero(trainer.history().back(), "validate_accuracy");
  }
  rows_.push_back(row);
}

void EpochRecorder::on_training_end(training::Trainer&) {
  if (rows_.empty()) return;
  last_ = debug::snapshot();
  finish_report(fmt::format("end of epoch {}", rows_.size()));
}

void EpochRecorder::snapshot_at_failure() {
  last_ = debug::snapshot();
  finish_report(fmt::format("when it died (epoch {})", epoch_ + 1));
}

// The last snapshot's entry and the manager tree at that point, for the report page.
void EpochRecorder::finish_report(const std::string& label) {
  report_.snapshots.push_back(report::snapshot_entry(*last_, label));
  report_.tree = report::tree_entry(debug::inspect(NDManager::system(), /*detailed=*/true), &*last_);
}

std::optional<debug::Diff> EpochRecorder::growth() const {
  if (!first_ || !last_) return std::nullopt;
  return debug::diff(*first_, *last_).growing();
}

}  // namespace ndgc::train_tool
