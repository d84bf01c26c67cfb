// What one configuration's run measured, per epoch, and how it travels:
// JSON (a child process hands its result to --compare through a file; the
// compare writes all of them into one file) and CSV (one row per
// configuration and epoch, for spreadsheets and plotting tools).
//
// JSON of a run:
//   {"config": "off", "leak": "model", "batches_per_epoch": 1875, "batch_size": 32, "seed": 42,
//    "device": "cpu" or "gpu:N", "precision": "fp32", "bf16" or "fp16",
//    "loss_scaling": null or {"scale": 32768.0, "skipped_steps": 3} (fp16),
//    "epochs": [{"epoch": 1, "seconds": 2.31, "bytes_in_use": ..., "peak_bytes": ..., "live_arrays": ...,
//                "reclaimed": ..., "leaked_handles": ..., "train_loss": ..., "test_accuracy": ...,
//                "gpu_allocated_bytes": ..., "gpu_reserved_bytes": ..., "gpu_peak_bytes": ...}, ...],
//    "growth": <debug::Diff JSON from the end of epoch 1 to the end of the last epoch, growing groups>,
//    "trace_leaks": [{"file": ..., "line": ..., "arrays": ..., "bytes": ...}, ...],
//    "autoclose_reclaims": [the same fields, what auto-close closed by site],
//    "failure": null or {"error": "OutOfMemory", "epoch": 3, "phase": "training", "step": 412, "steps": 1875,
//                        "message": <the error's first line>},
//    "ranks": <ranks.hpp's JSON under mpirun, else null>,
//    "report": {"timeline": null or {...}, "snapshots": [...], "tree": null or {...}}
//              (the report page's parts: ReportParts, src/report/page/SCHEMA.md)}
// A document without "device", "precision", the gpu_* fields, "failure" or "report"
// (written before they existed) reads as a float32 CPU run that finished.
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
  // On a GPU run (0 on the CPU): memory::stats of the run's GPU at the end of
  // the epoch (bytes handed out, bytes the caching allocator holds from the
  // driver) and the high-water mark of the bytes handed out during it.
  std::uint64_t gpu_allocated_bytes = 0;
  std::uint64_t gpu_reserved_bytes = 0;
  std::uint64_t gpu_peak_bytes = 0;
  friend bool operator==(const EpochRow&, const EpochRow&) = default;
};

// How a run ended early: the error, where (epoch from 1; phase "training" or
// "test"; the step running when it was thrown, from 1, of `steps` in that
// phase) and the first line of its message. Only OutOfMemory ends a run
// this way (under --gpu-limit, the leak's fate); other errors fail it.
struct RunFailure {
  std::string error;
  std::int64_t epoch = 0;
  std::string phase;
  std::int64_t step = 0;
  std::int64_t steps = 0;
  std::string message;
  friend bool operator==(const RunFailure&, const RunFailure&) = default;
};
// "OutOfMemory in epoch 3, training step 412 of 1875"
std::string where_it_died(const RunFailure& failure);

struct TraceLeak {
  std::string file;
  std::uint32_t line = 0;
  std::uint64_t arrays = 0, bytes = 0;
  friend bool operator==(const TraceLeak&, const TraceLeak&) = default;
};

// An fp16 run's loss scaler at the end: the scale, and the steps it skipped
// for an inf or NaN gradient (Note [Loss scaling] in src/training/precision.cpp).
struct ScalerFigures {
  double scale = 0;
  std::int64_t skipped_steps = 0;
  friend bool operator==(const ScalerFigures&, const ScalerFigures&) = default;
};

// The step workspace of a --workspace on run (workspace::Stats at the end).
struct WorkspaceFigures {
  std::uint64_t capacity = 0, peak_used = 0, spilled_bytes = 0, cycles = 0, allocations = 0;
  friend bool operator==(const WorkspaceFigures&, const WorkspaceFigures&) = default;
};

// What the report page (report.html, ndgc/report.hpp) shows of a run beyond
// its epochs, as JSON text of the report document's parts: empty when not
// recorded.
struct ReportParts {
  std::string timeline;                // report::SiteTimeline::to_json; with --memory-every
  std::vector<std::string> snapshots;  // report::snapshot_entry at the end of each epoch (or when it died)
  std::string tree;                    // report::tree_entry at the last snapshot
  friend bool operator==(const ReportParts&, const ReportParts&) = default;
};

struct RunResult {
  std::string model = "mlp";  // --model: mlp, cnn, lstm
  std::string config;  // off, on, trace
  std::string leak;    // none, model
  std::int64_t batches_per_epoch = 0;
  std::int64_t batch_size = 0;
  int compute_threads = 1;  // ndgc::num_threads() during the run
  std::uint64_t seed = 0;
  std::string device = "cpu";  // as --device spells it: "cpu", "gpu:0"
  std::string precision = "fp32";  // as --precision spells it: "fp32", "bf16", "fp16"
  std::optional<ScalerFigures> loss_scaling;     // fp16: what the loss scaler did
  std::vector<EpochRow> epochs;  // the epochs that finished
  std::optional<debug::Diff> growth;  // needs two epochs or more
  std::vector<TraceLeak> trace_leaks;
  // Auto-close on or trace: what its drain closed, by creation site
  // (debug::reclaimed; the same fields as a trace leak).
  std::vector<TraceLeak> autoclose_reclaims;
  std::optional<WorkspaceFigures> workspace;  // --workspace on
  std::optional<RankReport> ranks;             // under mpirun: every rank's figures (ranks.hpp)
  std::optional<RunFailure> failure;           // the run ended early (OutOfMemory)
  ReportParts report;                          // the report page's timeline, snapshots and tree
  bool on_gpu() const noexcept { return device != "cpu"; }
  friend bool operator==(const RunResult&, const RunResult&) = default;
};

// Whether any of `runs` trained on a GPU (the table, CSV and chart then
// show GPU memory beside host memory).
bool any_on_gpu(const std::vector<RunResult>& runs);

std::string to_json(const RunResult& run, int indent = 2);
// The "epochs" array of a run's JSON (above), alone.
std::string epochs_to_json(const std::vector<EpochRow>& rows);
// DataError naming what is wrong.
RunResult run_from_json(const std::string& text);
RunResult read_run(const std::filesystem::path& file);

// The runs of a --compare in one document: {"runs": [...]}.
std::string to_json(const std::vector<RunResult>& runs, int indent = 2);

// One header line, then one row per run and epoch:
//   config,epoch,seconds,bytes_in_use,mib_in_use,peak_bytes,peak_mib,
//   [gpu_allocated_bytes,gpu_allocated_mib,gpu_reserved_bytes,gpu_reserved_mib,gpu_peak_bytes,gpu_peak_mib,]
//   live_arrays,reclaimed,leaked_handles,train_loss,test_accuracy,precision[,failure]
// with the gpu_* columns when a run is on a GPU, then, when the first run has
// ranks (mpirun), the per-rank columns of rank_csv_header, and the failure
// column when a run ended early: such a run has one more row, for the epoch
// it died in, with empty figures and where_it_died(): its message.
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
