// The per-epoch progress bar and its plain-line fallback.
#include "progress.hpp"

#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include <ndgc/memory.hpp>

namespace ndgc::train_tool {
namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

constexpr auto kRedraw = std::chrono::milliseconds(100);

}  // namespace

std::string progress_line(const std::string& label, std::int64_t epoch, std::int64_t epochs, std::int64_t done,
                          std::int64_t total, double elapsed, int width) {
  const double share = total > 0 ? std::clamp(double(done) / double(total), 0.0, 1.0) : 1.0;
  const int filled = int(share * width + 0.5);
  const double rate = elapsed > 0 ? double(done) / elapsed : 0;
  std::string eta = rate > 0 ? fmt::format("{:.1f} s", double(total - done) / rate) : "?";
  return fmt::format("[{}] epoch {}/{} [{}{}] {}/{}  {:.0f} batches/s  ETA {}", label, epoch, epochs,
                     std::string(filled, '#'), std::string(width - filled, '.'), done, total, rate, eta);
}

ProgressBar::ProgressBar(std::ostream& out, bool terminal, std::string label, std::int64_t epochs,
                         std::int64_t train_batches, Device device)
    : out_(out), terminal_(terminal), label_(std::move(label)), epochs_(epochs), total_(train_batches), device_(device) {}

void ProgressBar::on_epoch_begin(training::Trainer&, std::int64_t) {
  done_ = 0;
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

void ProgressBar::on_batch_end(training::Trainer&, const training::BatchResult& batch) {
  if (!batch.training) return;
  ++done_;
  if (!terminal_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < kRedraw && done_ != total_) return;
  last_draw_ = now;
  out_ << '\r' << progress_line(label_, batch.epoch + 1, epochs_, done_, total_, since(start_)) << "\x1b[K"
       << std::flush;
}

void ProgressBar::on_epoch_end(training::Trainer& trainer, std::int64_t epoch) {
  const double seconds = since(start_);
  std::string line = fmt::format("[{}] epoch {}/{}: {} batches in {:.2f} s ({:.0f} batches/s)", label_, epoch + 1,
                                 epochs_, done_, seconds, seconds > 0 ? done_ / seconds : 0.0);
  if (!trainer.history().empty()) {
    const auto& h = trainer.history().back();
    if (auto it = h.find("train_loss"); it != h.end()) line += fmt::format(", loss {:.4f}", it->second);
    if (auto it = h.find("validate_accuracy"); it != h.end()) line += fmt::format(", test accuracy {:.4f}", it->second);
  }
  line += fmt::format(", {} in use", memory::format_bytes(memory::stats(Device::cpu()).current_bytes));
  if (!device_.is_cpu())
    line += fmt::format(", {} on {}", memory::format_bytes(memory::stats(device_).current_bytes), device_.to_string());
  if (terminal_) out_ << '\r' << line << "\x1b[K\n" << std::flush;
  else out_ << line << '\n' << std::flush;
}

}  // namespace ndgc::train_tool
