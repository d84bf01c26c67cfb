// What one configuration's run measured, per epoch, and how it travels:
// JSON (a child process hands its result to --compare through a file; the
// compare writes all of them into one file) and CSV (one row per
// configuration and epoch, for spreadsheets and plotting tools).
//
// JSON of a run:
//   {"config": "off", "leak": "model", "batches_per_epoch": 1875, "batch_size": 32, "seed": 42,
//    "epochs": [{"epoch": 1, "seconds": 2.31, "bytes_in_use": ..., "peak_bytes": ..., "live_arrays": ...,
//                "reclaimed": ..., "leaked_handles": ..., "train_loss": ..., "test_accuracy": ...}, ...],
//    "growth": <debug::Diff JSON from the end of epoch 1 to the end of the last epoch, growing groups>,
//    "trace_leaks": [{"file": ..., "line": ..., "arrays": ..., "bytes": ...}, ...],
//    "ranks": <ranks.hpp's JSON under mpirun, else null>}
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <ndgc/debug.hpp>

#include "ranks.hpp"

namespace ndgc::train_tool {

struct EpochRow {
  std::int64_t epoch = 0;            // from 1
  double seconds = 0;                // training and test of this epoch
  std::uint64_t bytes_in_use = 0;    // host bytes at the end of the epoch
  std::uint64_t peak_bytes = 0;      // host high-water mark during the epoch
  std::uint64_t live_arrays = 0;     // arrays open in the model's manager and below it
  std::uint64_t reclaimed = 0;       // arrays auto-close closed during the epoch
  std::uint64_t leaked_handles = 0;  // trace: handles found unreachable so far
  double train_loss = 0;
  double test_accuracy = 0;
  friend bool operator==(const EpochRow&, const EpochRow&) = default;
};

struct TraceLeak {
  std::string file;
  std::uint32_t line = 0;
  std::uint64_t arrays = 0, bytes = 0;
  friend bool operator==(const TraceLeak&, const TraceLeak&) = default;
};

// The step workspace of a --workspace on run (workspace::Stats at the end).
struct WorkspaceFigures {
  std::uint64_t capacity = 0, peak_used = 0, spilled_bytes = 0, cycles = 0, allocations = 0;
  friend bool operator==(const WorkspaceFigures&, const WorkspaceFigures&) = default;
};

struct RunResult {
  std::string config;  // off, on, trace
  std::string leak;    // none, model
  std::int64_t batches_per_epoch = 0;
  std::int64_t batch_size = 0;
  std::uint64_t seed = 0;
  std::vector<EpochRow> epochs;
  std::optional<debug::Diff> growth;  // needs two epochs or more
  std::vector<TraceLeak> trace_leaks;
  std::optional<WorkspaceFigures> workspace;  // --workspace on
  std::optional<RankReport> ranks;             // under mpirun: every rank's figures (ranks.hpp)
  friend bool operator==(const RunResult&, const RunResult&) = default;
};

std::string to_json(const RunResult& run, int indent = 2);
// DataError naming what is wrong.
RunResult run_from_json(const std::string& text);
RunResult read_run(const std::filesystem::path& file);

// The runs of a --compare in one document: {"runs": [...]}.
std::string to_json(const std::vector<RunResult>& runs, int indent = 2);

// One header line, then one row per run and epoch:
//   config,epoch,seconds,bytes_in_use,mib_in_use,peak_bytes,peak_mib,live_arrays,reclaimed,leaked_handles,train_loss,test_accuracy
// and, when the first run has ranks (mpirun), the per-rank columns of rank_csv_header.
std::string to_csv(const std::vector<RunResult>& runs);

// Writes `text` to `file` through a temporary file and a rename, so a reader
// never sees half a file. DataError when it cannot.
void write_file(const std::filesystem::path& file, const std::string& text);

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace ndgc::train_tool

namespace ndgc::train_tool {

// Where a run of configuration `config` leaves its result: <out>/run-<config>.json.
inline std::filesystem::path run_file(const std::filesystem::path& out, const std::string& config) {
  return out / ("run-" + config + ".json");
}

}  // namespace ndgc::train_tool
