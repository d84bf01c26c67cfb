// report.html's document (tools/ndgc_train/report_page.cpp) and the parts a
// run records for it (recorder.cpp, site_recorder.cpp): in-process runs on the
// small data set, on the CPU and on the simulated GPU, and a run under
// mpirun as rank 0 gathers it.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <ndgc/report.hpp>

#include "leak_run.hpp"
#include "ndgc_train/report_page.hpp"
#include "sim_gpu.hpp"

namespace ndgc::train_tool {
namespace {

using nlohmann::json;

// The LEAK line of leak.cpp whose bytes grow most: square().sum() (leak.cpp's header).
bool is_square_leak(const std::string& site) {
  return site.starts_with("tools/ndgc_train/leak.cpp:") && site != "tools/ndgc_train/leak.cpp:42";
}

json document_of(const std::vector<RunResult>& runs) { return json::parse(report_document(runs, "title")); }

}  // namespace

TEST_CASE("report parts of a leaking run: a snapshot per epoch, the tree, and the leak's band in the timeline") {
  SmallData data;
  Options o = leak_options(data, Device::cpu(), AutoClose::off);
  o.memory_every = 4;
  std::filesystem::create_directories(o.out);  // the memory CSV's folder, as main() makes it
  const RunResult r = run_in_process(o);
  REQUIRE(r.report.snapshots.size() == 3);
  CHECK(json::parse(r.report.snapshots[0])["label"] == "end of epoch 1");
  CHECK(json::parse(r.report.snapshots[2])["label"] == "end of epoch 3");
  REQUIRE_FALSE(r.report.tree.empty());
  const json timeline = json::parse(r.report.timeline);
  CHECK(timeline["x"].size() == 3 * 16 / 4);  // 16 training steps an epoch, a sample every 4
  CHECK(timeline["x_label"] == "training step");
  bool leak_grows = false;
  for (const json& s : timeline["sites"])
    if (is_square_leak(s["site"])) leak_grows = s["bytes"].back() > s["bytes"].front();
  CHECK(leak_grows);
  // And it travels with the run's JSON, as --compare's children hand it on.
  CHECK(run_from_json(to_json(r)).report == r.report);

  const json doc = document_of({r});
  CHECK(doc["format"] == "ndgc-report");
  CHECK(doc["source"] == "ndgc-train");
  const json& run = doc["runs"][0];
  CHECK(run["name"] == "off");
  CHECK(run["rank"].is_null());
  CHECK(run["epochs"].size() == 3);
  CHECK(run["snapshots"].size() == 3);
  CHECK(run["timeline"]["sites"].size() > 1);
  CHECK(run["tree"]["name"] == "system");
  CHECK_NOTHROW(report::page(doc.dump()));
}

TEST_CASE("report parts without --memory-every: no timeline; the snapshots, tree and auto-close's reclaims still") {
  SmallData data;
  const RunResult r = run_in_process(leak_options(data, Device::cpu(), AutoClose::on, 2));
  CHECK(r.report.timeline.empty());
  CHECK(r.report.snapshots.size() == 2);
  const json run = document_of({r})["runs"][0];
  CHECK(run["timeline"].is_null());
  // Auto-close on: what it closed, by site; the leak's lines among them, each step's arrays.
  bool leak_reclaimed = false;
  for (const json& e : run["reclaimed"])
    leak_reclaimed = leak_reclaimed || (is_square_leak(e["site"]) && e["by"] == "auto-close" && e["arrays"] >= 2 * 16);
  CHECK(leak_reclaimed);
  CHECK(run_from_json(to_json(r)).autoclose_reclaims == r.autoclose_reclaims);
  CHECK_FALSE(debug::count_reclaimed());  // switched off at the end of the run
}

TEST_CASE("report parts on a GPU: the timeline's GPU sites apart from the host's, and the GPU bytes") {
  SmallData data;
  test::SimGpu gpu;
  Options o = leak_options(data, Device::gpu(0), AutoClose::off, 2);
  o.memory_every = 8;
  std::filesystem::create_directories(o.out);
  const RunResult r = run_in_process(o);
  const json run = document_of({r})["runs"][0];
  CHECK(run["device"] == "gpu:0");
  bool gpu_site = false, host_site = false;
  for (const json& s : run["timeline"]["sites"]) {
    gpu_site = gpu_site || s["device"] == "gpu:0";
    host_site = host_site || s["device"] == "cpu";
  }
  CHECK(gpu_site);
  CHECK(host_site);  // the data set stays on the host
  CHECK(run["timeline"]["gpu_bytes"].back() > 0);
  CHECK(run["epochs"][0]["gpu_allocated_bytes"] > 0);
}

TEST_CASE("report document under mpirun: a run per rank, rank 0's own parts, the others' epochs and growth") {
  RunResult r;
  r.config = "off";
  r.leak = "model";
  for (std::int64_t e = 1; e <= 2; ++e) r.epochs.push_back(EpochRow{e, 1.0, 1, 1, 1, 0, 0, 0.5, 0.8});
  r.report.snapshots = {R"({"label":"end of epoch 1","time_ms":1,"groups":[]})"};
  RankReport ranks;
  ranks.size = 2;
  ranks.epochs = {{{1.5, 100, 110, 0, 0, 30}, {2.0, 101, 111, 0, 0, 30}},
                  {{1.25, 100, 110, 0, 0, 30}, {1.0, 105, 115, 0, 0, 430}}};
  debug::Diff grew;
  debug::DiffGroup g;
  g.manager = "system/model mlp";
  g.site.file = "tools/ndgc_train/leak.cpp";
  g.site.line = 37;
  g.arrays_after = 400;
  g.bytes_after = 40000;
  grew.groups.push_back(g);
  ranks.growth = {std::nullopt, grew};
  r.ranks = ranks;
  const json doc = document_of({r});
  REQUIRE(doc["runs"].size() == 2);
  CHECK(doc["runs"][0]["rank"] == 0);
  CHECK(doc["runs"][0]["snapshots"].size() == 1);  // rank 0's own
  const json& one = doc["runs"][1];
  CHECK(one["rank"] == 1);
  CHECK(one["epochs"][1]["seconds"] == 1.0);
  CHECK(one["epochs"][1]["live_arrays"] == 430);
  REQUIRE(one["snapshots"].size() == 2);
  CHECK(one["snapshots"][0]["groups"][0]["bytes"] == 0);
  CHECK(one["snapshots"][1]["groups"][0]["bytes"] == 40000);
  CHECK(one["snapshots"][1]["groups"][0]["site"] == "tools/ndgc_train/leak.cpp:37");
}

}  // namespace ndgc::train_tool
