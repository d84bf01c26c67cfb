// Measures each epoch of a run (EpochRow) and snapshots the arrays at the end
// of the first and the last epoch, for the leak report (debug::diff).
//
// Listen order matters: put the recorder first, so its timing starts before
// and ends before the other listeners' epoch hooks. At each epoch end it
// drains the auto-close queue (gc::poll, a no-op when off) before it reads
// the bytes in use, so "in use" is what the program really still holds.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include <ndgc/debug.hpp>
#include <ndgc/training.hpp>

#include "results.hpp"

namespace ndgc::train_tool {

class EpochRecorder : public training::TrainingListener {
 public:
  EpochRecorder() = default;
  void on_epoch_begin(training::Trainer&, std::int64_t epoch) override;
  void on_epoch_end(training::Trainer& trainer, std::int64_t epoch) override;
  void on_training_end(training::Trainer&) override;

  const std::vector<EpochRow>& rows() const noexcept { return rows_; }
  // Growing (manager, creation site) groups from the end of the first epoch
  // to the end of the last; empty for a one-epoch run.
  std::optional<debug::Diff> growth() const;

 private:
  std::chrono::steady_clock::time_point start_;
  std::uint64_t reclaimed_at_start_ = 0;
  std::vector<EpochRow> rows_;
  std::optional<debug::Snapshot> first_, last_;
};

}  // namespace ndgc::train_tool
