// The comparison table printed after the runs: one row per epoch, one column
// group per configuration, side by side, and a summary of what changed from
// the second epoch (the first includes warm-up) to the last. When a run is on
// a GPU every group also shows the GPU's MiB allocated and reserved (by the
// caching allocator) at the end of the epoch and the allocated peak during
// it; a run that died has a row for that epoch saying where
// ("died: OutOfMemory, training step 412 of 1875").
//
//          |               auto-close off                |               auto-close on
//    epoch |      s     MiB    peak  arrays reclaimed    acc |      s     MiB ...
//        1 |   2.41   221.0   221.6   26275         0 0.8213 |   2.38   215.9 ...
#pragma once

#include <string>
#include <vector>

#include "results.hpp"

namespace ndgc::train_tool {

std::string format_table(const std::vector<RunResult>& runs);

// The epoch the summary compares against: 2 when there are three epochs or
// more, else 1.
std::int64_t baseline_epoch(std::int64_t epochs) noexcept;

// Per configuration: last / baseline epoch duration, memory and live-array
// growth from the baseline epoch to the last, and the last test accuracy.
// With six epochs or more, also the median of the last three epochs'
// durations over the median of epochs 2-4 (less noisy than two single epochs).
std::string format_summary(const std::vector<RunResult>& runs);

// "auto-close off" / "auto-close on" / "trace" for a run's config.
std::string config_title(const std::string& config);

}  // namespace ndgc::train_tool
