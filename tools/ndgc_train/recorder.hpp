// Measures each epoch of a run (EpochRow) and snapshots the arrays at the end
// of each epoch: the first and the last for the leak report (debug::diff),
// every one for the report page (ReportParts), with the manager tree at the
// end.
//
// Listen order matters: put the recorder first, so its timing starts before
// and ends before the other listeners' epoch hooks. At each epoch end it
// drains the auto-close queue (gc::poll, a no-op when off) before it reads
// the bytes in use, so "in use" is what the program really still holds.
// On a GPU run it reads the GPU's memory::stats too (allocated, reserved,
// and the peak since the epoch began).
//
// It also knows where the run is, for a run that dies (RunFailure): the
// epoch, the phase and the step. A step's listeners run after the step, so
// an error thrown by a later listener (the leak's ops) belongs to the step
// that just ended, and one thrown by the step itself to the next: put
// step_end_marker() last among the listeners, so the recorder can tell.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include <ndgc/debug.hpp>
#include <ndgc/training.hpp>

#include "results.hpp"

namespace ndgc::train_tool {

class EpochRecorder : public training::TrainingListener {
 public:
  // `device`: the model's (GPU figures when it is a GPU); `train_steps`,
  // `test_steps`: batches per epoch of each phase (for where_it_died).
  explicit EpochRecorder(Device device = Device::cpu(), std::int64_t train_steps = 0, std::int64_t test_steps = 0)
      : device_(device), train_steps_(train_steps), test_steps_(test_steps) {}
  void on_epoch_begin(training::Trainer&, std::int64_t epoch) override;
  void on_batch_end(training::Trainer&, const training::BatchResult& batch) override;
  void on_epoch_end(training::Trainer& trainer, std::int64_t epoch) override;
  void on_training_end(training::Trainer&) override;

  const std::vector<EpochRow>& rows() const noexcept { return rows_; }
  // Growing (manager, creation site) groups from the end of the first epoch
  // to the end of the last (or to snapshot_at_failure()); empty for a
  // one-epoch run.
  std::optional<debug::Diff> growth() const;
  // For a run that died: the second snapshot, now (if the first was taken).
  void snapshot_at_failure();
  // Where the run is now, for an error of kind `error` (message: its first line).
  RunFailure failure(std::string error, const std::string& what) const;
  // The report page's snapshots (the end of each epoch, or when it died) and
  // manager tree (at the last of them).
  const ReportParts& report() const noexcept { return report_; }
  // The listener to put last: it marks the end of each step's listeners.
  std::shared_ptr<training::TrainingListener> step_end_marker();

 private:
  Device device_;
  std::int64_t train_steps_, test_steps_;
  std::chrono::steady_clock::time_point start_;
  std::uint64_t reclaimed_at_start_ = 0;
  std::vector<EpochRow> rows_;
  std::optional<debug::Snapshot> first_, last_;
  ReportParts report_;
  void finish_report(const std::string& label);
  // Position: the epoch (from 0), steps ended in each phase, and whether the
  // last step's listeners are still running.
  std::int64_t epoch_ = 0, trained_ = 0, tested_ = 0;
  bool in_listeners_ = false;
  bool last_was_test_ = false;
};

}  // namespace ndgc::train_tool
