// A progress bar per epoch on a terminal (batches, rate, ETA), redrawn at
// most ten times a second; one plain line per epoch when the output is not a
// terminal (CI logs, pipes, --compare's captured children).
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

#include <ndgc/training.hpp>

namespace ndgc::train_tool {

// "[off] epoch 2/3 [#######.......] 1200/1875  812 batches/s  ETA 0.8 s"
// (`width`: characters of the bar between the brackets).
std::string progress_line(const std::string& label, std::int64_t epoch, std::int64_t epochs, std::int64_t done,
                          std::int64_t total, double elapsed_seconds, int width = 30);

class ProgressBar : public training::TrainingListener {
 public:
  // `train_batches`: training batches per epoch; `device`: the model's (a
  // GPU's bytes in use are shown beside the host's).
  ProgressBar(std::ostream& out, bool terminal, std::string label, std::int64_t epochs, std::int64_t train_batches,
              Device device = Device::cpu());
  void on_epoch_begin(training::Trainer&, std::int64_t epoch) override;
  void on_batch_end(training::Trainer&, const training::BatchResult& batch) override;
  void on_epoch_end(training::Trainer& trainer, std::int64_t epoch) override;

 private:
  std::ostream& out_;
  bool terminal_;
  std::string label_;
  std::int64_t epochs_, total_;
  Device device_;
  std::int64_t done_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace ndgc::train_tool
