// OrphanSampler (orphan_sampler.hpp): Note [Counting orphans off the I/O threads].
#include "serving/orphan_sampler.hpp"

#include "ndgc/debug.hpp"

namespace ndgc::serving {

OrphanSampler::OrphanSampler(std::chrono::milliseconds interval) : interval_(interval), thread_([this] { run(); }) {}

OrphanSampler::~OrphanSampler() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::uint64_t OrphanSampler::latest() {
  std::unique_lock lock(mutex_);
  if (samples_ == 0 || std::chrono::steady_clock::now() - taken_ >= interval_) {
    wanted_ = true;
    wake_.notify_one();
  }
  sampled_.wait(lock, [&] { return samples_ > 0; });
  return orphans_;
}

std::uint64_t OrphanSampler::samples() const {
  std::lock_guard lock(mutex_);
  return samples_;
}

void OrphanSampler::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || wanted_; });
    if (stop_) return;
    wanted_ = false;
    lock.unlock();
    const std::uint64_t orphans = debug::snapshot().orphan_count();
    lock.lock();
    orphans_ = orphans;
    taken_ = std::chrono::steady_clock::now();
    ++samples_;
    sampled_.notify_all();
  }
}

}  // namespace ndgc::serving
