// report_document(): RunResult, as the report page reads it.
#include "report_page.hpp"

#include <chrono>

#include <nlohmann/json.hpp>

namespace ndgc::train_tool {
namespace {

using nlohmann::json;

// A run's page entry. Its epochs and, with `own_parts`, its timeline,
// snapshots and tree are those of the run's own JSON (results.hpp).
json base_run(const RunResult& r, bool own_parts) {
  const json written = json::parse(to_json(r, -1));
  json failure(nullptr);
  if (r.failure)
    failure = {{"error", r.failure->error}, {"where", where_it_died(*r.failure)}, {"message", r.failure->message}};
  json reclaimed = json::array();
  for (const auto& [sites, by] : {std::pair{&r.autoclose_reclaims, "auto-close"}, std::pair{&r.trace_leaks, "trace"}})
    for (const TraceLeak& l : *sites)
      reclaimed.push_back({{"site", l.file + ":" + std::to_string(l.line)}, {"arrays", l.arrays}, {"bytes", l.bytes},
                           {"by", by}});
  const json& parts = written.at("report");
  return {{"name", r.config},
          {"rank", nullptr},
          {"device", r.device},
          {"precision", r.precision},
          {"epochs", written.at("epochs")},
          {"failure", std::move(failure)},
          {"timeline", own_parts ? parts.at("timeline") : json(nullptr)},
          {"snapshots", own_parts ? parts.at("snapshots") : json::array()},
          {"reclaimed", std::move(reclaimed)},
          {"tree", own_parts ? parts.at("tree") : json(nullptr)}};
}

// A rank's growth as two snapshots (the end of epoch 1, the end of the last
// epoch) holding the groups that grew: what the page's leak table and diff
// need. Orphans are not gathered from other ranks.
json growth_snapshots(const debug::Diff& growth, std::size_t epochs) {
  json before = json::array(), after = json::array();
  for (const debug::DiffGroup& g : growth.groups) {
    json group{{"manager", g.manager}, {"site", g.site.to_string()}, {"function", g.site.function},
               {"workspace", g.workspace}, {"device", device_argument(g.device)}, {"orphans", 0}};
    group["arrays"] = g.arrays_before;
    group["bytes"] = g.bytes_before;
    before.push_back(group);
    group["arrays"] = g.arrays_after;
    group["bytes"] = g.bytes_after;
    after.push_back(std::move(group));
  }
  return json::array({json{{"label", "end of epoch 1"}, {"time_ms", growth.before.time_ms}, {"groups", before}},
                      json{{"label", "end of epoch " + std::to_string(epochs)}, {"time_ms", growth.after.time_ms},
                           {"groups", after}}});
}

// Rank `rank` of a run under mpirun, from what rank 0 gathered.
json rank_run(const RunResult& r, int rank) {
  json run = base_run(r, false);
  run["rank"] = rank;
  run["reclaimed"] = json::array();
  std::vector<EpochRow> rows;
  for (std::size_t e = 0; e < r.ranks->epochs.size(); ++e) {
    const RankEpoch& re = r.ranks->epochs[e].at(std::size_t(rank));
    EpochRow row = e < r.epochs.size() ? r.epochs[e] : EpochRow{};
    row.epoch = std::int64_t(e + 1);
    row.seconds = re.seconds;
    row.bytes_in_use = re.host_bytes;
    row.peak_bytes = re.host_peak_bytes;
    row.live_arrays = re.live_arrays;
    row.gpu_allocated_bytes = re.gpu_bytes;
    row.gpu_peak_bytes = re.gpu_peak_bytes;
    rows.push_back(row);
  }
  run["epochs"] = json::parse(epochs_to_json(rows));
  const auto& growth = r.ranks->growth.at(std::size_t(rank));
  if (growth) run["snapshots"] = growth_snapshots(*growth, r.ranks->epochs.size());
  return run;
}

}  // namespace

std::string report_document(const std::vector<RunResult>& runs, const std::string& title) {
  json list = json::array();
  for (const RunResult& r : runs) {
    if (!r.ranks) {
      list.push_back(base_run(r, true));
      continue;
    }
    json zero = base_run(r, true);  // rank 0 ran here: its own parts
    zero["rank"] = 0;
    list.push_back(std::move(zero));
    for (int rank = 1; rank < r.ranks->size; ++rank) list.push_back(rank_run(r, rank));
  }
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  return json{{"format", "ndgc-report"}, {"version", 1},
              {"title", title},          {"source", "ndgc-train"},
              {"created_ms", now.count()}, {"runs", std::move(list)},
              {"live", nullptr}}
      .dump();
}

}  // namespace ndgc::train_tool
