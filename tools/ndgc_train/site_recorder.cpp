// SiteRecorder: a timeline sample every N training steps (site_recorder.hpp).
#include "site_recorder.hpp"

#include <ndgc/debug.hpp>
#include <ndgc/memory.hpp>

namespace ndgc::train_tool {

void SiteRecorder::on_batch_end(training::Trainer&, const training::BatchResult& batch) {
  if (!batch.training || ++steps_ % every_ != 0) return;
  const std::uint64_t host = memory::stats(Device::cpu()).current_bytes;
  const std::uint64_t gpu = device_.is_cpu() ? 0 : memory::stats(device_).current_bytes;
  timeline_.add(double(steps_), batch.epoch + 1, debug::snapshot(), host, gpu);
}

std::string SiteRecorder::timeline_json() const {
  return timeline_.samples() == 0 ? std::string() : timeline_.to_json("training step");
}

}  // namespace ndgc::train_tool
