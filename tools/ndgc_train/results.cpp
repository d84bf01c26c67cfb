// RunResult to and from JSON (nlohmann-json), and CSV.
#include "results.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ndgc/error.hpp>

namespace ndgc::train_tool {
namespace {

using nlohmann::json;

json parsed_or_null(const std::string& text) { return text.empty() ? json(nullptr) : json::parse(text); }

json report_json(const ReportParts& p) {
  json snapshots = json::array();
  for (const std::string& s : p.snapshots) snapshots.push_back(json::parse(s));
  return {{"timeline", parsed_or_null(p.timeline)}, {"snapshots", std::move(snapshots)}, {"tree", parsed_or_null(p.tree)}};
}

ReportParts report_from_json(const json& j) {
  ReportParts p;
  if (!j.at("timeline").is_null()) p.timeline = j.at("timeline").dump();
  for (const json& s : j.at("snapshots")) p.snapshots.push_back(s.dump());
  if (!j.at("tree").is_null()) p.tree = j.at("tree").dump();
  return p;
}

json sites_json(const std::vector<TraceLeak>& sites) {
  json out = json::array();
  for (const TraceLeak& l : sites)
    out.push_back({{"file", l.file}, {"line", l.line}, {"arrays", l.arrays}, {"bytes", l.bytes}});
  return out;
}

std::vector<TraceLeak> sites_from_json(const json& list) {
  std::vector<TraceLeak> out;
  for (const json& l : list)
    out.push_back({l.at("file").get<std::string>(), l.at("line").get<std::uint32_t>(),
                   l.at("arrays").get<std::uint64_t>(), l.at("bytes").get<std::uint64_t>()});
  return out;
}

json epoch_json(const EpochRow& e) {
  return {{"epoch", e.epoch},
          {"seconds", e.seconds},
          {"bytes_in_use", e.bytes_in_use},
          {"peak_bytes", e.peak_bytes},
          {"live_arrays", e.live_arrays},
          {"reclaimed", e.reclaimed},
          {"leaked_handles", e.leaked_handles},
          {"train_loss", e.train_loss},
          {"test_accuracy", e.test_accuracy},
          {"gpu_allocated_bytes", e.gpu_allocated_bytes},
          {"gpu_reserved_bytes", e.gpu_reserved_bytes},
          {"gpu_peak_bytes", e.gpu_peak_bytes}};
}

json epochs_array(const std::vector<EpochRow>& rows) {
  json epochs = json::array();
  for (const EpochRow& e : rows) epochs.push_back(epoch_json(e));
  return epochs;
}

json run_json(const RunResult& r) {
  json epochs = epochs_array(r.epochs);
  json leaks = sites_json(r.trace_leaks);
  json ws(nullptr);
  if (r.workspace)
    ws = {{"capacity", r.workspace->capacity},
          {"peak_used", r.workspace->peak_used},
          {"spilled_bytes", r.workspace->spilled_bytes},
          {"cycles", r.workspace->cycles},
          {"allocations", r.workspace->allocations}};
  json failure(nullptr);
  if (r.failure)
    failure = {{"error", r.failure->error}, {"epoch", r.failure->epoch}, {"phase", r.failure->phase},
               {"step", r.failure->step},   {"steps", r.failure->steps}, {"message", r.failure->message}};
  return {{"model", r.model},
          {"config", r.config},
          {"leak", r.leak},
          {"batches_per_epoch", r.batches_per_epoch},
          {"batch_size", r.batch_size},
          {"compute_threads", r.compute_threads},
          {"seed", r.seed},
          {"device", r.device},
          {"precision", r.precision},
          {"loss_scaling", r.loss_scaling ? json{{"scale", r.loss_scaling->scale},
                                                 {"skipped_steps", r.loss_scaling->skipped_steps}}
                                          : json(nullptr)},
          {"epochs", std::move(epochs)},
          {"failure", std::move(failure)},
          {"growth", r.growth ? json::parse(r.growth->to_json()) : json(nullptr)},
          {"trace_leaks", std::move(leaks)},
          {"autoclose_reclaims", sites_json(r.autoclose_reclaims)},
          {"workspace", std::move(ws)},
          {"ranks", r.ranks ? json::parse(ranks_to_json(*r.ranks)) : json(nullptr)},
          {"report", report_json(r.report)}};
}

template <class T>
T value_or(const json& j, const char* key, T fallback) {
  return j.contains(key) ? j.at(key).get<T>() : fallback;
}

// "1.5" (MiB, three decimals), or an empty cell for a figure the run does not have.
std::string mib_cell(std::uint64_t bytes) { return fmt::format("{:.3f}", bytes / kMiB); }

// A CSV field: quoted, inner quotes doubled.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string where_it_died(const RunFailure& f) {
  return fmt::format("{} in epoch {}, {} step {} of {}", f.error, f.epoch, f.phase, f.step, f.steps);
}

bool any_on_gpu(const std::vector<RunResult>& runs) {
  for (const RunResult& r : runs)
    if (r.on_gpu()) return true;
  return false;
}

std::string to_json(const RunResult& run, int indent) { return run_json(run).dump(indent); }

std::string epochs_to_json(const std::vector<EpochRow>& rows) { return epochs_array(rows).dump(); }

std::string to_json(const std::vector<RunResult>& runs, int indent) {
  json all = json::array();
  for (const RunResult& r : runs) all.push_back(run_json(r));
  return json{{"runs", std::move(all)}}.dump(indent);
}

RunResult run_from_json(const std::string& text) {
  try {
    const json j = json::parse(text);
    RunResult r;
    r.model = j.value("model", std::string("mlp"));
    r.config = j.at("config").get<std::string>();
    r.leak = j.at("leak").get<std::string>();
    r.batches_per_epoch = j.at("batches_per_epoch").get<std::int64_t>();
    r.batch_size = j.at("batch_size").get<std::int64_t>();
    r.compute_threads = j.value("compute_threads", 1);
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
      row.gpu_allocated_bytes = value_or<std::uint64_t>(e, "gpu_allocated_bytes", 0);
      row.gpu_reserved_bytes = value_or<std::uint64_t>(e, "gpu_reserved_bytes", 0);
      row.gpu_peak_bytes = value_or<std::uint64_t>(e, "gpu_peak_bytes", 0);
      r.epochs.push_back(row);
    }
    r.device = value_or<std::string>(j, "device", "cpu");
    r.precision = value_or<std::string>(j, "precision", "fp32");
    if (j.contains("loss_scaling") && !j.at("loss_scaling").is_null())
      r.loss_scaling = ScalerFigures{j.at("loss_scaling").at("scale").get<double>(),
                                   j.at("loss_scaling").at("skipped_steps").get<std::int64_t>()};
    if (j.contains("failure") && !j.at("failure").is_null()) {
      const json& f = j.at("failure");
      r.failure = RunFailure{f.at("error").get<std::string>(), f.at("epoch").get<std::int64_t>(),
                             f.at("phase").get<std::string>(), f.at("step").get<std::int64_t>(),
                             f.at("steps").get<std::int64_t>(), f.at("message").get<std::string>()};
    }
    if (!j.at("growth").is_null()) r.growth = debug::Diff::from_json(j.at("growth").dump());
    r.trace_leaks = sites_from_json(j.at("trace_leaks"));
    if (j.contains("autoclose_reclaims")) r.autoclose_reclaims = sites_from_json(j.at("autoclose_reclaims"));
    if (j.contains("workspace") && !j.at("workspace").is_null()) {
      const json& w = j.at("workspace");
      r.workspace = WorkspaceFigures{w.at("capacity").get<std::uint64_t>(), w.at("peak_used").get<std::uint64_t>(),
                                     w.at("spilled_bytes").get<std::uint64_t>(), w.at("cycles").get<std::uint64_t>(),
                                     w.at("allocations").get<std::uint64_t>()};
    }
    if (j.contains("ranks") && !j.at("ranks").is_null()) r.ranks = ranks_from_json(j.at("ranks").dump());
    if (j.contains("report")) r.report = report_from_json(j.at("report"));
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
  const bool gpu = any_on_gpu(runs);
  bool failures = false;
  for (const RunResult& r : runs) failures |= r.failure.has_value();
  std::string out = "config,epoch,seconds,bytes_in_use,mib_in_use,peak_bytes,peak_mib,";
  if (gpu)
    out += "gpu_allocated_bytes,gpu_allocated_mib,gpu_reserved_bytes,gpu_reserved_mib,gpu_peak_bytes,gpu_peak_mib,";
  out += "live_arrays,reclaimed,leaked_handles,train_loss,test_accuracy,precision";
  const RankReport* ranks = !runs.empty() && runs.front().ranks ? &*runs.front().ranks : nullptr;
  const std::string rank_header = ranks ? rank_csv_header(*ranks) : std::string();  // ",rank0_...,..."
  out += rank_header;
  out += failures ? ",failure\n" : "\n";
  // Cells between epoch and failure, left empty in a failure's row.
  const std::size_t figures = 5 + (gpu ? 6 : 0) + 6 + std::size_t(std::count(rank_header.begin(), rank_header.end(), ','));
  for (const RunResult& r : runs) {
    for (const EpochRow& e : r.epochs) {
      out += fmt::format("{},{},{:.6f},{},{},{},{},", r.config, e.epoch, e.seconds, e.bytes_in_use,
                         mib_cell(e.bytes_in_use), e.peak_bytes, mib_cell(e.peak_bytes));
      if (gpu)
        out += fmt::format("{},{},{},{},{},{},", e.gpu_allocated_bytes, mib_cell(e.gpu_allocated_bytes),
                           e.gpu_reserved_bytes, mib_cell(e.gpu_reserved_bytes), e.gpu_peak_bytes,
                           mib_cell(e.gpu_peak_bytes));
      out += fmt::format("{},{},{},{:.6f},{:.6f},{}{}", e.live_arrays, e.reclaimed, e.leaked_handles, e.train_loss,
                         e.test_accuracy, r.precision, r.ranks ? rank_csv_cells(*r.ranks, e.epoch) : std::string());
      out += failures ? ",\n" : "\n";
    }
    if (r.failure) {  // the epoch it died in: no figures, where and why
      out += fmt::format("{},{},{},{}\n", r.config, r.failure->epoch, std::string(figures - 1, ','),
                         quoted(where_it_died(*r.failure) + ": " + r.failure->message));
    }
  }
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
