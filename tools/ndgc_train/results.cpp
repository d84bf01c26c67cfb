// RunResult to and from JSON (nlohmann-json), and CSV.
#include "results.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ndgc/error.hpp>

namespace ndgc::train_tool {
namespace {

using nlohmann::json;

json run_json(const RunResult& r) {
  json epochs = json::array();
  for (const EpochRow& e : r.epochs)
    epochs.push_back({{"epoch", e.epoch},
                      {"seconds", e.seconds},
                      {"bytes_in_use", e.bytes_in_use},
                      {"peak_bytes", e.peak_bytes},
                      {"live_arrays", e.live_arrays},
                      {"reclaimed", e.reclaimed},
                      {"leaked_handles", e.leaked_handles},
                      {"train_loss", e.train_loss},
                      {"test_accuracy", e.test_accuracy}});
  json leaks = json::array();
  for (const TraceLeak& l : r.trace_leaks)
    leaks.push_back({{"file", l.file}, {"line", l.line}, {"arrays", l.arrays}, {"bytes", l.bytes}});
  json ws(nullptr);
  if (r.workspace)
    ws = {{"capacity", r.workspace->capacity},
          {"peak_used", r.workspace->peak_used},
          {"spilled_bytes", r.workspace->spilled_bytes},
          {"cycles", r.workspace->cycles},
          {"allocations", r.workspace->allocations}};
  return {{"config", r.config},
          {"leak", r.leak},
          {"batches_per_epoch", r.batches_per_epoch},
          {"batch_size", r.batch_size},
          {"seed", r.seed},
          {"epochs", std::move(epochs)},
          {"growth", r.growth ? json::parse(r.growth->to_json()) : json(nullptr)},
          {"trace_leaks", std::move(leaks)},
          {"workspace", std::move(ws)},
          {"ranks", r.ranks ? json::parse(ranks_to_json(*r.ranks)) : json(nullptr)}};
}

}  // namespace

std::string to_json(const RunResult& run, int indent) { return run_json(run).dump(indent); }

std::string to_json(const std::vector<RunResult>& runs, int indent) {
  json all = json::array();
  for (const RunResult& r : runs) all.push_back(run_json(r));
  return json{{"runs", std::move(all)}}.dump(indent);
}

RunResult run_from_json(const std::string& text) {
  try {
    const json j = json::parse(text);
    RunResult r;
    r.config = j.at("config").get<std::string>();
    r.leak = j.at("leak").get<std::string>();
    r.batches_per_epoch = j.at("batches_per_epoch").get<std::int64_t>();
    r.batch_size = j.at("batch_size").get<std::int64_t>();
    r.seed = j.at("seed").get<std::uint64_t>();
    for (const json& e : j.at("epochs")) {
      EpochRow row;
      row.epoch = e.at("epoch").get<std::int64_t>();
      row.seconds = e.at("seconds").get<double>();
      row.bytes_in_use = e.at("bytes_in_use").get<std::uint64_t>();
      row.peak_bytes = e.at("peak_bytes").get<std::uint64_t>();
      row.live_arrays = e.at("live_arrays").get<std::uint64_t>();
      row.reclaimed = e.at("reclaimed").get<std::uint64_t>();
      row.leaked_handles = e.at("leaked_handles").get<std::uint64_t>();
      row.train_loss = e.at("train_loss").get<double>();
      row.test_accuracy = e.at("test_accuracy").get<double>();
      r.epochs.push_back(row);
    }
    if (!j.at("growth").is_null()) r.growth = debug::Diff::from_json(j.at("growth").dump());
    for (const json& l : j.at("trace_leaks"))
      r.trace_leaks.push_back({l.at("file").get<std::string>(), l.at("line").get<std::uint32_t>(),
                               l.at("arrays").get<std::uint64_t>(), l.at("bytes").get<std::uint64_t>()});
    if (j.contains("workspace") && !j.at("workspace").is_null()) {
      const json& w = j.at("workspace");
      r.workspace = WorkspaceFigures{w.at("capacity").get<std::uint64_t>(), w.at("peak_used").get<std::uint64_t>(),
                                     w.at("spilled_bytes").get<std::uint64_t>(), w.at("cycles").get<std::uint64_t>(),
                                     w.at("allocations").get<std::uint64_t>()};
    }
    if (j.contains("ranks") && !j.at("ranks").is_null()) r.ranks = ranks_from_json(j.at("ranks").dump());
    return r;
  } catch (const json::exception& e) {
    throw DataError(fmt::format("ndgc-train: a run's result is not valid: {}", e.what()));
  }
}

RunResult read_run(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw DataError(fmt::format("ndgc-train: cannot read {}", file.string()));
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return run_from_json(text.str());
  } catch (const DataError& e) {
    throw DataError(fmt::format("{} (in {})", e.what(), file.string()));
  }
}

std::string to_csv(const std::vector<RunResult>& runs) {
  std::string out =
      "config,epoch,seconds,bytes_in_use,mib_in_use,peak_bytes,peak_mib,live_arrays,reclaimed,leaked_handles,"
      "train_loss,test_accuracy";
  const RankReport* ranks = !runs.empty() && runs.front().ranks ? &*runs.front().ranks : nullptr;
  out += (ranks ? rank_csv_header(*ranks) : std::string()) + "\n";
  for (const RunResult& r : runs)
    for (const EpochRow& e : r.epochs)
      out += fmt::format("{},{},{:.6f},{},{:.3f},{},{:.3f},{},{},{},{:.6f},{:.6f}{}\n", r.config, e.epoch, e.seconds,
                         e.bytes_in_use, e.bytes_in_use / kMiB, e.peak_bytes, e.peak_bytes / kMiB, e.live_arrays,
                         e.reclaimed, e.leaked_handles, e.train_loss, e.test_accuracy,
                         r.ranks ? rank_csv_cells(*r.ranks, e.epoch) : std::string());
  return out;
}

void write_file(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::path tmp = file;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    if (!out) throw DataError(fmt::format("ndgc-train: cannot create {}", tmp.string()));
    out << text;
    if (!out.flush()) throw DataError(fmt::format("ndgc-train: cannot write {}", tmp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw DataError(fmt::format("ndgc-train: cannot rename {} to {}: {}", tmp.string(), file.string(), ec.message()));
}

}  // namespace ndgc::train_tool
