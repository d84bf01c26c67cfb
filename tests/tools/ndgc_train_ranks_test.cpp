// ndgc-train under mpirun (tools/ndgc_train/ranks.cpp, rank_support.cpp): the
// per-rank figures' JSON, CSV columns, table and leak report, then the
// program itself under `mpiexec -n 1 ... : -n 1 ...` (two ranks, each given
// its own --out, so a file written by rank 1 would show), checked for the
// per-rank columns in rank 0's files and for rank 1 writing nothing.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ndgc/data.hpp>
#include <ndgc/error.hpp>

#include "ndgc_train/ranks.hpp"
#include "ndgc_train/report.hpp"
#include "ndgc_train/results.hpp"

namespace ndgc::train_tool {
namespace {

namespace fs = std::filesystem;

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

debug::Diff growth_at(const std::string& file, std::uint32_t line, std::uint64_t arrays) {
  debug::Diff d;
  d.before = {0, 10, 1000};
  d.after = {0, 10 + arrays, 1000 + 100 * arrays};
  debug::DiffGroup g;
  g.manager = "system/model mlp";
  g.site.file = file;
  g.site.line = line;
  g.arrays_before = 0, g.arrays_after = arrays;
  g.bytes_before = 0, g.bytes_after = 100 * arrays;
  d.groups.push_back(g);
  return d;
}

RankReport two_ranks(bool gpu) {
  RankReport r;
  r.size = 2;
  r.gpu = gpu;
  r.epochs = {{{1.5, 100 << 20, 110 << 20, 0, 0, 30}, {2.0, 101 << 20, 111 << 20, 0, 0, 30}},
              {{1.25, 100 << 20, 110 << 20, 0, 0, 30}, {1.0, 105 << 20, 115 << 20, 0, 0, 430}}};
  if (gpu) r.epochs[1][1].gpu_bytes = 7 << 20;
  r.growth = {std::nullopt, growth_at("tools/ndgc_train/leak.cpp", 37, 400)};
  return r;
}

}  // namespace

TEST_CASE("ranks: slowest rank and spread, JSON round trip") {
  const RankReport r = two_ranks(true);
  CHECK(slowest_seconds(r.epochs[0]) == 2.0);
  CHECK(seconds_spread(r.epochs[0]) == 0.5);
  CHECK(seconds_spread({}) == 0);
  CHECK(ranks_from_json(ranks_to_json(r)) == r);
  const nlohmann::json j = nlohmann::json::parse(ranks_to_json(r));
  CHECK(j.at("slowest_seconds").at(1).get<double>() == 1.25);
  CHECK(j.at("seconds_spread").at(1).get<double>() == 0.25);
  CHECK_THROWS_WITH_AS(ranks_from_json("{\"size\": 2}"), doctest::Contains("per-rank figures are not valid"), DataError);

  // Inside a run's JSON, and absent (null) for a run without ranks.
  RunResult run;
  run.config = "off";
  run.leak = "none";
  run.ranks = r;
  CHECK(run_from_json(to_json(run)) == run);
  run.ranks.reset();
  CHECK(nlohmann::json::parse(to_json(run)).at("ranks").is_null());
  CHECK(run_from_json(to_json(run)) == run);
}

TEST_CASE("ranks: CSV columns per rank, GPU columns only with a GPU") {
  RunResult run;
  run.config = "off";
  for (std::int64_t e = 1; e <= 2; ++e) run.epochs.push_back(EpochRow{e, 1.0, 1, 1, 1, 0, 0, 0.5, 0.8});
  run.ranks = two_ranks(false);
  const std::string csv = to_csv({run});
  const std::string header = csv.substr(0, csv.find('\n'));
  CHECK(header.ends_with(
      ",test_accuracy,precision,ranks,slowest_seconds,seconds_spread,rank0_seconds,rank0_mib,rank0_peak_mib,rank1_seconds,"
      "rank1_mib,rank1_peak_mib"));
  CHECK(csv.find("off,2,") != std::string::npos);
  CHECK(csv.find(",2,1.250000,0.250000,1.250000,100.000,110.000,1.000000,105.000,115.000\n") != std::string::npos);
  // Every row has as many cells as the header.
  std::istringstream lines(csv);
  for (std::string l; std::getline(lines, l);) CHECK(occurrences(l, ",") == occurrences(header, ","));

  run.ranks = two_ranks(true);
  CHECK(to_csv({run}).find("rank1_gpu_mib,rank1_gpu_peak_mib\n") != std::string::npos);
  CHECK(rank_csv_cells(*run.ranks, 9) == ",2" + std::string(2 + 5 * 2, ','));  // an epoch it lacks: empty cells
  run.ranks.reset();
  CHECK(to_csv({run}).find("ranks") == std::string::npos);  // one process: the columns as before
}

TEST_CASE("ranks: the table has a column group per rank; the leak report names the ranks that grew") {
  const RankReport r = two_ranks(false);
  const std::string table = format_rank_table(r);
  CHECK(table.find("Per rank (2 ranks)") != std::string::npos);
  CHECK(table.find("rank 0") != std::string::npos);
  CHECK(table.find("rank 1") != std::string::npos);
  CHECK(table.find("GPU") == std::string::npos);
  CHECK(table.find("2.00") != std::string::npos);  // epoch 1's slowest
  CHECK(format_rank_table(two_ranks(true)).find("GPU MiB") != std::string::npos);

  const std::string leaks = format_rank_leak_report(r);
  CHECK(leaks.find("1 of 2 ranks grew") != std::string::npos);
  CHECK(leaks.find("(ranks 1)") != std::string::npos);
  CHECK(leaks.find("rank 1: diff: +400 arrays") != std::string::npos);
  CHECK(leaks.find("leak.cpp:37") != std::string::npos);
  CHECK(leaks.find("ranks 0: no creation site grew") != std::string::npos);

  RankReport flat = r;
  flat.growth = {std::nullopt, std::nullopt};
  CHECK(format_rank_leak_report(flat).find("no creation site grew on any of the 2 ranks") != std::string::npos);
  RankReport one_epoch = r;
  one_epoch.epochs.pop_back();
  CHECK(format_rank_leak_report(one_epoch).empty());

  // Growth in a workspace is listed apart and does not count as a rank that grew.
  RankReport in_ws = r;
  debug::Diff kept = growth_at("tools/ndgc_train/step.cpp", 9, 50);
  kept.groups[0].workspace = "STEP";
  in_ws.growth = {kept, std::nullopt};
  const std::string ws_text = format_rank_leak_report(in_ws);
  CAPTURE(ws_text);
  CHECK(ws_text.find("no creation site grew on any of the 2 ranks") != std::string::npos);
  CHECK(ws_text.find("rank 0, kept in workspaces (not a manager leak): diff: +50 arrays") != std::string::npos);
  CHECK(ws_text.find("step.cpp:9  in workspace 'STEP'") != std::string::npos);
  in_ws.growth[1] = r.growth[1];
  const std::string both = format_rank_leak_report(in_ws);
  CHECK(both.find("1 of 2 ranks grew") != std::string::npos);
  CHECK(both.find("(ranks 1)") != std::string::npos);
  CHECK(occurrences(both, "step.cpp:9") == 1);
  CHECK(both.find("step.cpp:9") > both.find("leak.cpp:37"));

  // The whole report: the per-rank table and leak report in place of rank 0's alone.
  RunResult run;
  run.config = "off";
  run.leak = "model";
  for (std::int64_t e = 1; e <= 2; ++e) run.epochs.push_back(EpochRow{e, 1.0, 1, 1, 1, 0, 0, 0.5, 0.8});
  run.ranks = r;
  const std::string report = format_report({run});
  CHECK(report.find("Per rank (2 ranks)") != std::string::npos);
  CHECK(report.find("1 of 2 ranks grew") != std::string::npos);
}

#ifdef NDGC_TRAIN_MPIEXEC
namespace {

int run_shell(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_all(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("ndgc-train under mpirun, 2 ranks: rank 0 reports every rank and writes the files; rank 1 writes nothing") {
  if (!data::FashionMnist::available()) {
    MESSAGE("skipped: Fashion-MNIST is not installed (tools/bootstrap installs dataset-fashion-mnist)");
    return;
  }
  const fs::path tmp = fs::temp_directory_path() / ("ndgc-train-ranks-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const fs::path out0 = tmp / "rank0", out1 = tmp / "rank1", log = tmp / "log.txt";
  const std::string args = "--epochs 2 --limit-batches 20 --batch-size 16 --leak model --autoclose off";
  // Two application contexts of one job (MPMD): the same run, each rank its own --out.
  const std::string cmd = fmt::format("NDGC_DIST_TIMEOUT=60 {0} -n 1 '{1}' {2} --out '{3}' : -n 1 '{1}' {2} --out '{4}' > '{5}' 2>&1",
                                      NDGC_TRAIN_MPIEXEC, NDGC_TRAIN_BINARY, args, out0.string(), out1.string(),
                                      log.string());
  const int rc = run_shell(cmd);
  const std::string output = read_all(log);
  INFO(output);
  REQUIRE(rc == 0);

  CHECK_FALSE(fs::exists(out1));
  for (const char* f : {"run-off.csv", "run-off.json", "run-off.svg", "report.html"}) CHECK(fs::file_size(out0 / f) > 0);
  // The report page: a run per rank, for its rank selector.
  const std::string page = read_all(out0 / "report.html");
  CHECK(page.find("\"rank\":0") != std::string::npos);
  CHECK(page.find("\"rank\":1") != std::string::npos);
  CHECK(occurrences(output, "Per rank (2 ranks)") == 1);  // printed by rank 0 only
  CHECK(occurrences(output, "written:") == 1);

  const RunResult run = read_run(out0 / "run-off.json");
  REQUIRE(run.ranks);
  CHECK(run.ranks->size == 2);
  REQUIRE(run.ranks->epochs.size() == 2);
  for (const auto& ranks : run.ranks->epochs) {
    REQUIRE(ranks.size() == 2);
    for (const RankEpoch& e : ranks) {
      CHECK(e.seconds > 0);
      CHECK(e.host_bytes > 0);
      CHECK(e.host_peak_bytes >= e.host_bytes);
    }
  }
  // --leak model leaks on every rank: each rank's diff names leak.cpp.
  REQUIRE(run.ranks->growth.size() == 2);
  for (const auto& g : run.ranks->growth) {
    REQUIRE(g);
    REQUIRE_FALSE(g->groups.empty());
    for (const debug::DiffGroup& group : g->groups) CHECK(group.site.file.ends_with("leak.cpp"));
  }
  CHECK(output.find("2 of 2 ranks grew") != std::string::npos);
  const std::string csv = read_all(out0 / "run-off.csv");
  CHECK(csv.substr(0, csv.find('\n')).find(",rank1_seconds,rank1_mib,rank1_peak_mib") != std::string::npos);

  // --compare forks children: refused under mpirun, exit code 2.
  CHECK(run_shell(fmt::format("{} -n 1 '{}' --compare --out '{}' > '{}' 2>&1", NDGC_TRAIN_MPIEXEC, NDGC_TRAIN_BINARY,
                              out1.string(), log.string())) == 2);
  CHECK(read_all(log).find("under mpirun, run one configuration per job") != std::string::npos);
  CHECK_FALSE(fs::exists(out1));
  fs::remove_all(tmp);
}
#endif

}  // namespace ndgc::train_tool
