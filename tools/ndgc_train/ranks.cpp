// RankReport: JSON (nlohmann-json), CSV columns, the per-rank table and the
// per-rank leak report. See ranks.hpp.
#include "ranks.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <ndgc/error.hpp>

#include "results.hpp"

namespace ndgc::train_tool {
namespace {

using nlohmann::json;

const std::vector<RankEpoch>* epoch_of(const RankReport& r, std::int64_t epoch) {
  if (epoch < 1 || std::size_t(epoch) > r.epochs.size()) return nullptr;
  return &r.epochs[std::size_t(epoch - 1)];
}

}  // namespace

double slowest_seconds(const std::vector<RankEpoch>& ranks) noexcept {
  double s = 0;
  for (const RankEpoch& e : ranks) s = std::max(s, e.seconds);
  return s;
}

double seconds_spread(const std::vector<RankEpoch>& ranks) noexcept {
  if (ranks.empty()) return 0;
  double lo = ranks.front().seconds, hi = lo;
  for (const RankEpoch& e : ranks) lo = std::min(lo, e.seconds), hi = std::max(hi, e.seconds);
  return hi - lo;
}

std::string ranks_to_json(const RankReport& r) {
  json epochs = json::array(), slowest = json::array(), spread = json::array();
  for (const auto& ranks : r.epochs) {
    json row = json::array();
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      const RankEpoch& e = ranks[k];
      row.push_back({{"rank", k},
                     {"seconds", e.seconds},
                     {"host_bytes", e.host_bytes},
                     {"host_peak_bytes", e.host_peak_bytes},
                     {"gpu_bytes", e.gpu_bytes},
                     {"gpu_peak_bytes", e.gpu_peak_bytes},
                     {"live_arrays", e.live_arrays}});
    }
    epochs.push_back(std::move(row));
    slowest.push_back(slowest_seconds(ranks));
    spread.push_back(seconds_spread(ranks));
  }
  json growth = json::array();
  for (const auto& g : r.growth) growth.push_back(g ? json::parse(g->to_json()) : json(nullptr));
  return json{{"size", r.size},
              {"gpu", r.gpu},
              {"epochs", std::move(epochs)},
              {"slowest_seconds", std::move(slowest)},
              {"seconds_spread", std::move(spread)},
              {"growth", std::move(growth)}}
      .dump();
}

RankReport ranks_from_json(const std::string& text) {
  try {
    const json j = json::parse(text);
    RankReport r;
    r.size = j.at("size").get<int>();
    r.gpu = j.at("gpu").get<bool>();
    for (const json& row : j.at("epochs")) {
      std::vector<RankEpoch> ranks;
      for (const json& e : row)
        ranks.push_back({e.at("seconds").get<double>(), e.at("host_bytes").get<std::uint64_t>(),
                         e.at("host_peak_bytes").get<std::uint64_t>(), e.at("gpu_bytes").get<std::uint64_t>(),
                         e.at("gpu_peak_bytes").get<std::uint64_t>(), e.at("live_arrays").get<std::uint64_t>()});
      r.epochs.push_back(std::move(ranks));
    }
    for (const json& g : j.at("growth"))
      r.growth.push_back(g.is_null() ? std::nullopt : std::optional(debug::Diff::from_json(g.dump())));
    return r;
  } catch (const json::exception& e) {
    throw DataError(fmt::format("ndgc-train: the per-rank figures are not valid: {}", e.what()));
  }
}

std::string rank_csv_header(const RankReport& r) {
  std::string out = ",ranks,slowest_seconds,seconds_spread";
  for (int k = 0; k < r.size; ++k) {
    out += fmt::format(",rank{0}_seconds,rank{0}_mib,rank{0}_peak_mib", k);
    if (r.gpu) out += fmt::format(",rank{0}_gpu_mib,rank{0}_gpu_peak_mib", k);
  }
  return out;
}

std::string rank_csv_cells(const RankReport& r, std::int64_t epoch) {
  const std::vector<RankEpoch>* ranks = epoch_of(r, epoch);
  const std::size_t per_rank = r.gpu ? 5 : 3;
  if (!ranks) return fmt::format(",{}", r.size) + std::string(2 + per_rank * std::size_t(r.size), ',');
  std::string out = fmt::format(",{},{:.6f},{:.6f}", r.size, slowest_seconds(*ranks), seconds_spread(*ranks));
  for (int k = 0; k < r.size; ++k) {
    if (std::size_t(k) >= ranks->size()) {
      out += std::string(per_rank, ',');
      continue;
    }
    const RankEpoch& e = (*ranks)[std::size_t(k)];
    out += fmt::format(",{:.6f},{:.3f},{:.3f}", e.seconds, e.host_bytes / kMiB, e.host_peak_bytes / kMiB);
    if (r.gpu) out += fmt::format(",{:.3f},{:.3f}", e.gpu_bytes / kMiB, e.gpu_peak_bytes / kMiB);
  }
  return out;
}

std::string format_rank_table(const RankReport& r) {
  std::string out = fmt::format(
      "Per rank ({} ranks): epoch time of the slowest rank and the spread between ranks; each rank's seconds, "
      "host MiB in use and peak{}\n",
      r.size, r.gpu ? ", GPU MiB in use and peak" : "");
  const std::string group = r.gpu ? "{:>7} {:>8} {:>8} {:>8} {:>8}" : "{:>7} {:>8} {:>8}";
  const int width = r.gpu ? 7 + 4 * 9 : 7 + 2 * 9;
  out += fmt::format("{:>6} | {:>8} {:>8}", "", "slowest", "spread");
  for (int k = 0; k < r.size; ++k) {
    const std::string title = fmt::format("rank {}", k);
    const int pad = std::max(0, width - int(title.size()));
    out.append(" | ").append(std::size_t(pad / 2), ' ').append(title).append(std::size_t(pad - pad / 2), ' ');
  }
  out += fmt::format("\n{:>6} | {:>8} {:>8}", "epoch", "s", "s");
  for (int k = 0; k < r.size; ++k)
    out.append(" | ").append(r.gpu ? fmt::format(fmt::runtime(group), "s", "MiB", "peak", "GPU MiB", "GPU peak")
                                   : fmt::format(fmt::runtime(group), "s", "MiB", "peak"));
  out.append("\n").append(6, '-').append("-+-").append(17, '-');
  for (int k = 0; k < r.size; ++k) out.append("-+-").append(std::size_t(width), '-');
  out += "\n";
  for (std::size_t i = 0; i < r.epochs.size(); ++i) {
    const auto& ranks = r.epochs[i];
    out += fmt::format("{:>6} | {:>8.2f} {:>8.3f}", i + 1, slowest_seconds(ranks), seconds_spread(ranks));
    for (const RankEpoch& e : ranks) {
      out += fmt::format(" | {:>7.2f} {:>8.1f} {:>8.1f}", e.seconds, e.host_bytes / kMiB, e.host_peak_bytes / kMiB);
      if (r.gpu) out += fmt::format(" {:>8.1f} {:>8.1f}", e.gpu_bytes / kMiB, e.gpu_peak_bytes / kMiB);
    }
    out += "\n";
  }
  return out;
}

std::string format_rank_leak_report(const RankReport& r, std::size_t max_groups) {
  if (r.epochs.size() < 2) return {};
  // As in format_leak_report: what workspaces keep is not a manager leak.
  std::vector<int> grew;
  std::string kept;
  for (std::size_t k = 0; k < r.growth.size(); ++k) {
    if (!r.growth[k]) continue;
    if (!r.growth[k]->outside_workspaces().groups.empty()) grew.push_back(int(k));
    if (const debug::Diff in = r.growth[k]->in_workspaces(); !in.groups.empty())
      kept += fmt::format("rank {}, kept in workspaces (not a manager leak): {}", k, in.to_text(max_groups));
  }
  const std::size_t last = r.epochs.size();
  if (grew.empty())
    return fmt::format("Leak report per rank: no creation site grew on any of the {} ranks from the end of epoch 1 "
                       "to the end of epoch {}\n{}",
                       r.size, last, kept);
  std::string out = fmt::format(
      "Leak report per rank: {} of {} ranks grew from the end of epoch 1 to the end of epoch {} (ranks {})\n",
      grew.size(), r.size, last, fmt::join(grew, ", "));
  for (int k : grew) {
    out += fmt::format("rank {}: {}", k, r.growth[std::size_t(k)]->outside_workspaces().to_text(max_groups));
  }
  std::vector<int> flat;
  for (int k = 0; k < r.size; ++k)
    if (std::find(grew.begin(), grew.end(), k) == grew.end()) flat.push_back(k);
  if (!flat.empty()) out += fmt::format("ranks {}: no creation site grew\n", fmt::join(flat, ", "));
  return out + kept;
}

}  // namespace ndgc::train_tool
