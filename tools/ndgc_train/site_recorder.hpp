// --memory-every N, for the report page: every N training steps, the bytes of
// live arrays by creation site (report::SiteTimeline), so the timeline shows
// which site's band grows. One debug::snapshot() per sample: a walk over the
// live arrays, ~10 ms per 100k (perf/RESULTS.md measures what it adds to an
// epoch).
#pragma once

#include <ndgc/report.hpp>
#include <ndgc/training.hpp>

namespace ndgc::train_tool {

class SiteRecorder : public training::TrainingListener {
 public:
  // `device`: the model's (its allocator's bytes go beside the host's).
  SiteRecorder(std::int64_t every_steps, Device device) : every_(every_steps), device_(device) {}
  void on_batch_end(training::Trainer&, const training::BatchResult& batch) override;
  // SiteTimeline::to_json, or empty when no sample was taken.
  std::string timeline_json() const;

 private:
  std::int64_t every_;
  Device device_;
  std::int64_t steps_ = 0;
  report::SiteTimeline timeline_;
};

}  // namespace ndgc::train_tool
