// ndgc-train under `mpirun -np N`: what every rank measured, gathered on
// rank 0, and how it is shown: per-rank columns of the table, the CSV and the
// JSON, and the leak report per rank.
//
//   RankReport r;                      // filled by the program (rank_gather.cpp)
//   std::string table = format_rank_table(r);
//   std::string leaks = format_rank_leak_report(r);
//
// The epoch time of a data-parallel job is its slowest rank's (every step
// ends in an all-reduce that waits for it); the spread (slowest − fastest)
// says how uneven the ranks were. Memory is per rank: host bytes in use at
// the epoch's end and their peak during it, and the same for the GPUs when
// the rank sees any. A leak is usually one rank's: the leak report says which
// ranks grew and by which creation sites (each rank's debug::diff from the
// end of epoch 1 to the end of the last epoch, growing groups only); groups
// in workspaces are listed after it and do not make a rank count as grown.
//
// Pure functions of the data: no MPI here, so the tests link them directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ndgc/debug.hpp>

namespace ndgc::train_tool {

struct RankEpoch {
  double seconds = 0;  // this rank's epoch, training and test
  std::uint64_t host_bytes = 0, host_peak_bytes = 0;
  std::uint64_t gpu_bytes = 0, gpu_peak_bytes = 0;  // all GPUs this rank sees; 0 without one
  std::uint64_t live_arrays = 0;
  friend bool operator==(const RankEpoch&, const RankEpoch&) = default;
};

struct RankReport {
  int size = 1;
  bool gpu = false;                              // some rank saw a GPU: GPU columns shown
  std::vector<std::vector<RankEpoch>> epochs;    // [epoch - 1][rank]
  std::vector<std::optional<debug::Diff>> growth;  // [rank]: growing groups; empty with one epoch
  friend bool operator==(const RankReport&, const RankReport&) = default;
};

// Over one epoch's ranks.
double slowest_seconds(const std::vector<RankEpoch>& ranks) noexcept;
double seconds_spread(const std::vector<RankEpoch>& ranks) noexcept;  // slowest − fastest

// {"size": 2, "gpu": false, "epochs": [[{"rank": 0, "seconds": ..., "host_bytes": ..., ...}, ...], ...],
//  "slowest_seconds": [...], "seconds_spread": [...], "growth": [<debug::Diff JSON> | null, ...]}
std::string ranks_to_json(const RankReport& report);
// DataError naming what is wrong.
RankReport ranks_from_json(const std::string& text);

// CSV columns appended to ndgc-train's rows when the run had ranks:
//   ranks,slowest_seconds,seconds_spread,rank0_seconds,rank0_mib,rank0_peak_mib[,rank0_gpu_mib,rank0_gpu_peak_mib],rank1_...
// Each begins with a comma. Cells of an epoch the report lacks are empty.
std::string rank_csv_header(const RankReport& report);
std::string rank_csv_cells(const RankReport& report, std::int64_t epoch);

// One row per epoch: the slowest rank's seconds, the spread, then per rank
// seconds, MiB in use and peak MiB (and GPU MiB when any rank has a GPU).
std::string format_rank_table(const RankReport& report);

// Which ranks grew from the end of epoch 1 to the end of the last epoch and
// by which creation sites; a line saying so when none did. Empty with one epoch.
std::string format_rank_leak_report(const RankReport& report, std::size_t max_groups = 10);

}  // namespace ndgc::train_tool
