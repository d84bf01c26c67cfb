// ndgc-train (tools/ndgc_train/): its pure pieces (options, results' JSON and
// CSV, the table, the SVG chart, the progress line), then the program end to
// end: `ndgc-train --compare --leak model` on 200 batches per epoch, checked
// for what issue 4 promises (growth with auto-close off and the leaking line
// named; flat memory with it on; the files written).
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ndgc/data.hpp>
#include <ndgc/error.hpp>

#include "ndgc_train/options.hpp"
#include "ndgc_train/progress.hpp"
#include "ndgc_train/report.hpp"
#include "ndgc_train/results.hpp"
#include "ndgc_train/svg_chart.hpp"
#include "ndgc_train/table.hpp"
#include "small_fashion_mnist.hpp"

namespace ndgc::train_tool {
namespace {

namespace fs = std::filesystem;

ParseOutcome parse(std::vector<std::string> args, bool trace = true) { return parse_options(args, trace); }

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

RunResult fake_run(const std::string& config, std::vector<double> seconds, std::vector<double> mib) {
  RunResult r;
  r.config = config;
  r.leak = "model";
  r.batches_per_epoch = 200;
  r.batch_size = 32;
  r.seed = 42;
  for (std::size_t i = 0; i < seconds.size(); ++i) {
    EpochRow e;
    e.epoch = std::int64_t(i) + 1;
    e.seconds = seconds[i];
    e.bytes_in_use = std::uint64_t(mib[i] * kMiB);
    e.peak_bytes = e.bytes_in_use + 1000;
    e.live_arrays = 30 + 100 * i;
    e.reclaimed = config == "off" ? 0 : 2800;
    e.train_loss = 0.5;
    e.test_accuracy = 0.8125;
    r.epochs.push_back(e);
  }
  return r;
}

// Tags balance: every <x ...> is closed by </x> in order or is self-closed;
// attribute values are quoted. Enough to catch what a hand-written writer
// gets wrong.
bool well_formed_xml(const std::string& s, std::string& why) {
  std::vector<std::string> open;
  std::size_t i = 0;
  while ((i = s.find('<', i)) != std::string::npos) {
    const std::size_t end = s.find('>', i);
    if (end == std::string::npos) return why = "unterminated tag", false;
    const std::string tag = s.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.starts_with("?") || tag.starts_with("!")) continue;
    if (count(tag, "\"") % 2 != 0) return why = "odd quotes in <" + tag + ">", false;
    if (tag.starts_with("/")) {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return why = "unexpected </" + name + ">", false;
      open.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    if (!tag.ends_with("/")) open.push_back(name);
  }
  if (!open.empty()) return why = "<" + open.back() + "> never closed", false;
  // Text and attribute values contain no raw '&' other than entities.
  for (std::size_t a = s.find('&'); a != std::string::npos; a = s.find('&', a + 1))
    if (s.compare(a, 5, "&amp;") && s.compare(a, 4, "&lt;") && s.compare(a, 4, "&gt;") && s.compare(a, 6, "&quot;") &&
        s.compare(a, 6, "&apos;"))
      return why = "raw &", false;
  return true;
}

// A leak diff from 10 arrays to 10 + the groups' growth, 10 bytes per array.
debug::Diff diff_of(std::vector<debug::DiffGroup> groups) {
  debug::Diff d;
  d.before = {0, 10, 100};
  d.after = d.before;
  for (const debug::DiffGroup& g : groups) d.after.arrays += g.arrays_after, d.after.bytes += g.bytes_after;
  d.groups = std::move(groups);
  return d;
}

}  // namespace

TEST_CASE("options: defaults and values") {
  ParseOutcome p = parse({});
  REQUIRE(p.options);
  CHECK(p.options->epochs == 3);
  CHECK(p.options->batch_size == 32);
  CHECK(p.options->autoclose == AutoClose::off);
  CHECK(p.options->leak == Leak::none);
  CHECK_FALSE(p.options->compare);
  p = parse({"--epochs", "10", "--batch-size", "64", "--limit-batches", "200", "--seed", "7", "--threads", "2",
             "--autoclose", "trace", "--leak", "model", "--out", "/tmp/x", "--data-dir", "/d"});
  REQUIRE(p.options);
  CHECK(p.options->epochs == 10);
  CHECK(p.options->batch_size == 64);
  CHECK(p.options->limit_batches == 200);
  CHECK(p.options->seed == 7);
  CHECK(p.options->threads == 2);
  CHECK(p.options->autoclose == AutoClose::trace);
  CHECK(p.options->leak == Leak::model);
  CHECK(p.options->out == "/tmp/x");
  CHECK(p.options->data_dir == "/d");
  p = parse({"--epochs", "3", "--out", "out", "--epochs", "10", "--out", "elsewhere"});  // tools/demo "$@"
  REQUIRE(p.options);
  CHECK(p.options->epochs == 10);
  CHECK(p.options->out == "elsewhere");
}

TEST_CASE("options: bad values are errors naming the option, exit code 2") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
      {{"--epochs", "0"}, "--epochs"},
      {{"--epochs", "three"}, "--epochs"},
      {{"--batch-size", "-1"}, "--batch-size"},
      {{"--limit-batches", "-5"}, "--limit-batches"},
      {{"--threads", "0"}, "--threads"},
      {{"--autoclose", "maybe"}, "--autoclose"},
      {{"--leak", "everything"}, "--leak"},
      {{"--compare", "--autoclose", "on"}, "excludes"},
      {{"--no-such-option"}, "no-such-option"},
  };
  for (const auto& [args, mention] : bad) {
    CAPTURE(args.front());
    const ParseOutcome p = parse(args);
    CHECK_FALSE(p.options);
    CHECK(p.exit_code == 2);
    CHECK(p.message.find(mention) != std::string::npos);
  }
  const ParseOutcome no_trace = parse({"--autoclose", "trace"}, /*trace=*/false);
  CHECK_FALSE(no_trace.options);
  CHECK(no_trace.exit_code == 2);
  CHECK(no_trace.message.find("ndgc::trace") != std::string::npos);
  const ParseOutcome help = parse({"--help"});
  CHECK_FALSE(help.options);
  CHECK(help.exit_code == 0);
  CHECK(help.message.find("--autoclose") != std::string::npos);
}

TEST_CASE("options: a child's arguments give the parent's run") {
  ParseOutcome p = parse({"--epochs", "4", "--limit-batches", "9", "--seed", "5", "--leak", "model", "--compare",
                          "--out", "o", "--data-dir", "d"});
  REQUIRE(p.options);
  ParseOutcome c = parse(child_arguments(*p.options, AutoClose::on));
  REQUIRE(c.options);
  CHECK(c.options->epochs == 4);
  CHECK(c.options->limit_batches == 9);
  CHECK(c.options->seed == 5);
  CHECK(c.options->leak == Leak::model);
  CHECK(c.options->autoclose == AutoClose::on);
  CHECK(c.options->out == "o");
  CHECK(c.options->data_dir == "d");
  CHECK(c.options->child);
  CHECK_FALSE(c.options->compare);
}

TEST_CASE("options: --workspace on|off, in children and in config names") {
  ParseOutcome p = parse({});
  REQUIRE(p.options);
  CHECK_FALSE(p.options->workspace);
  p = parse({"--workspace", "on", "--autoclose", "on"});
  REQUIRE(p.options);
  CHECK(p.options->workspace);
  ParseOutcome c = parse(child_arguments(*p.options, AutoClose::off, /*workspace=*/true));
  REQUIRE(c.options);
  CHECK(c.options->workspace);
  CHECK(c.options->autoclose == AutoClose::off);
  c = parse(child_arguments(*p.options, AutoClose::on));
  REQUIRE(c.options);
  CHECK_FALSE(c.options->workspace);
  CHECK(config_name({AutoClose::off, true}) == "workspace");
  CHECK(config_name({AutoClose::on, true}) == "on+workspace");
  CHECK(config_name({AutoClose::on, false}) == "on");
  const ParseOutcome bad = parse({"--workspace", "sometimes"});
  CHECK_FALSE(bad.options);
  CHECK(bad.exit_code == 2);
  CHECK(bad.message.find("--workspace") != std::string::npos);
}

TEST_CASE("results: a workspace run's arena figures survive JSON and reach the report") {
  RunResult r = fake_run("workspace", {1.0, 1.0}, {10, 10});
  r.workspace = WorkspaceFigures{1 << 20, 900 << 10, 4096, 20, 400};
  const RunResult back = run_from_json(to_json(r));
  CHECK(back == r);
  const std::string report = format_report({r});
  CAPTURE(report);
  CHECK(report.find("arena 1.0 MiB (peak in use 900.0 KiB), spilled 4.0 KiB in all, 20 steps, 400 array storages") !=
        std::string::npos);
}

TEST_CASE("results: JSON round trip and CSV rows") {
  RunResult r = fake_run("off", {1.5, 1.25, 1.375}, {200, 201, 202});
  r.trace_leaks.push_back({"/src/a.cpp", 12, 3, 4096});
  CHECK(run_from_json(to_json(r)) == r);
  CHECK_THROWS_AS(run_from_json("{\"config\": 1}"), DataError);
  CHECK_THROWS_AS(run_from_json("not json"), DataError);
  const std::string csv = to_csv({r, fake_run("on", {1, 1}, {200, 200})});
  CHECK(count(csv, "\n") == 1 + 3 + 2);
  CHECK(csv.starts_with("config,epoch,seconds,"));
  CHECK(csv.find("\noff,2,1.250000,") != std::string::npos);
}

TEST_CASE("table: one column group per run, one row per epoch, blanks for missing epochs") {
  const std::vector<RunResult> runs{fake_run("off", {2.0, 2.5, 3.0}, {200, 205, 210}),
                                    fake_run("on", {2.0, 2.0}, {200, 200})};
  const std::string t = format_table(runs);
  std::vector<std::string> lines;
  std::istringstream in(t);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  REQUIRE(lines.size() == 3 + 3);
  CHECK(lines[0].find("auto-close off") < lines[0].find("auto-close on"));
  CHECK(lines[1].find("epoch") != std::string::npos);
  CHECK(count(lines[1], "reclaimed") == 2);
  for (const std::string& l : lines) CHECK(l.size() == lines[2].size());  // aligned, blanks included
  CHECK(lines[3].find("   2.00    200.0") != std::string::npos);
  CHECK(lines[5].find("   3.00    210.0") != std::string::npos);
  CHECK(lines[5].find("0.8125") != std::string::npos);
  CHECK(count(lines[5], "0.8125") == 1);  // the on run has no epoch 3
  const std::string s = format_summary(runs);
  CHECK(s.find("epoch 3 / epoch 2 duration 1.200") != std::string::npos);
  CHECK(s.find("memory +5.0 MiB, live arrays +100") != std::string::npos);
  CHECK(s.find("epoch 2 / epoch 1 duration 1.000") != std::string::npos);
  CHECK(s.find("median") == std::string::npos);
  const std::string m = format_summary({fake_run("on", {9, 1, 2, 1.5, 5, 3, 3.3, 3}, {1, 1, 1, 1, 1, 1, 1, 1})});
  CHECK(m.find("epoch 8 / epoch 2 duration 3.000 (median of epochs 6-8 / median of epochs 2-4: 2.000)") !=
        std::string::npos);
  CHECK(baseline_epoch(10) == 2);
  CHECK(baseline_epoch(2) == 1);
}

TEST_CASE("SVG chart: well-formed, one polyline per configuration in each panel") {
  const std::vector<RunResult> runs{fake_run("off", {2.0, 2.5, 3.0}, {200, 205, 210}),
                                    fake_run("on", {2.0, 2.0, 2.0}, {200, 200, 200}),
                                    fake_run("trace", {2.1, 2.1, 2.1}, {200, 200, 200})};
  const std::string svg = render_chart(runs, "a <title> & more");
  std::string why;
  CHECK_MESSAGE(well_formed_xml(svg, why), why);
  CHECK(svg.starts_with("<?xml"));
  CHECK(count(svg, "<polyline ") == 6);
  for (const char* c : {"off", "on", "trace"}) {
    CHECK(count(svg, fmt::format("data-config=\"{}\" data-panel=\"seconds\"", c)) == 1);
    CHECK(count(svg, fmt::format("data-config=\"{}\" data-panel=\"memory\"", c)) == 1);
  }
  CHECK(count(svg, "<circle ") == 18);
  CHECK(svg.find("a &lt;title&gt; &amp; more") != std::string::npos);
  CHECK(svg.find("auto-close trace") != std::string::npos);  // legend
  CHECK(svg.find(">epoch<") != std::string::npos);           // axis label
  // A single flat run still draws (no division by zero).
  const std::string flat = render_chart({fake_run("on", {1.0}, {10})}, "t");
  CHECK(well_formed_xml(flat, why));
  CHECK(flat.find("nan") == std::string::npos);
  CHECK(flat.find("inf") == std::string::npos);
}

TEST_CASE("nice ticks cover the range in steps of 1, 2 or 5 times a power of ten") {
  const std::vector<double> t = nice_ticks(0, 3.7);
  CHECK(t.front() == 0);
  CHECK(t.back() >= 3.7);
  CHECK(t[1] - t[0] == doctest::Approx(1));
  const std::vector<double> m = nice_ticks(203.2, 215.9);
  CHECK(m.front() <= 203.2);
  CHECK(m.back() >= 215.9);
  CHECK(m.size() <= 8);
  CHECK(nice_ticks(5, 5).size() >= 2);
}

TEST_CASE("progress line: bar, counts, rate and ETA") {
  const std::string l = progress_line("on", 2, 3, 50, 200, 0.5, 20);
  CHECK(l == "[on] epoch 2/3 [#####...............] 50/200  100 batches/s  ETA 1.5 s");
  CHECK(progress_line("off", 1, 1, 0, 10, 0, 4).find("ETA ?") != std::string::npos);
}

TEST_CASE("report: the leak report of a run with growth, and a note for runs without") {
  RunResult off = fake_run("off", {1, 1, 1}, {1, 2, 3});
  off.growth = diff_of({{"system/mlp", {"/x/leak.cpp", 42, "f"}, 0, 30, 0, 300}});
  RunResult on = fake_run("on", {1, 1, 1}, {1, 1, 1});
  on.growth = debug::Diff{};
  const std::string r = format_report({off, on});
  CHECK(r.find("Leak report, auto-close off") != std::string::npos);
  CHECK(r.find("/x/leak.cpp:42") != std::string::npos);
  CHECK(r.find("auto-close on: no creation site grew") != std::string::npos);
}

TEST_CASE("report: arrays kept in workspaces are reported apart from manager leaks") {
  RunResult ws = fake_run("off", {1, 1, 1}, {1, 2, 3});
  const debug::Diff d = diff_of({{"system/mlp", {"/x/leak.cpp", 42, "f"}, 0, 30, 0, 300},
                                 {"system/mlp", {"/x/step.cpp", 7, "g"}, 0, 20, 0, 200, "STEP"}});
  ws.growth = d;
  const std::string r = format_leak_report(ws);
  CAPTURE(r);
  const std::size_t leaks = r.find("Leak report, auto-close off");
  const std::size_t kept = r.find("Kept in workspaces, auto-close off");
  REQUIRE(leaks != std::string::npos);
  REQUIRE(kept != std::string::npos);
  CHECK(leaks < kept);
  // The manager leak is in the first section only, the workspace's arrays in the second only.
  CHECK(r.find("/x/leak.cpp:42") < kept);
  CHECK(r.find("/x/step.cpp:7") > kept);
  CHECK(r.find("in workspace 'STEP'") > kept);
  CHECK(count(r, "/x/leak.cpp:42") == 1);
  CHECK(count(r, "/x/step.cpp:7") == 1);

  // Only workspace growth: no leak report section at all.
  debug::Diff only_ws = d;
  only_ws.groups.erase(only_ws.groups.begin());
  ws.growth = only_ws;
  const std::string r2 = format_leak_report(ws);
  CHECK(r2.find("Leak report") == std::string::npos);
  CHECK(r2.find("Kept in workspaces") != std::string::npos);
}

// ---- GPU runs (issue 14): options, columns, the run that died ------------------------

namespace {

// A run on gpu:0: `fake_run` plus GPU figures (allocated MiB per epoch, reserved
// 4 MiB above it, the peak 1 MiB above it).
RunResult fake_gpu_run(const std::string& config, std::vector<double> seconds, std::vector<double> gpu_mib) {
  RunResult r = fake_run(config, seconds, std::vector<double>(seconds.size(), 100.0));
  r.device = "gpu:0";
  for (std::size_t i = 0; i < r.epochs.size(); ++i) {
    r.epochs[i].gpu_allocated_bytes = std::uint64_t(gpu_mib[i] * kMiB);
    r.epochs[i].gpu_reserved_bytes = std::uint64_t((gpu_mib[i] + 4) * kMiB);
    r.epochs[i].gpu_peak_bytes = std::uint64_t((gpu_mib[i] + 1) * kMiB);
  }
  return r;
}

// The off run of a --gpu-limit comparison: two epochs, then OutOfMemory in the third.
RunResult died_in_epoch_3() {
  RunResult r = fake_gpu_run("off", {1.0, 1.5}, {10, 20});
  r.failure = RunFailure{"OutOfMemory", 3, "training", 42, 200,
                         "OutOfMemory: cannot allocate 1.0 MiB (1048576 bytes) on gpu(0): over the limit of 24.0 MiB"};
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

}  // namespace

TEST_CASE("options: --device cpu|gpu[:N] and --gpu-limit, in children too") {
  ParseOutcome p = parse({});
  REQUIRE(p.options);
  CHECK(p.options->device == Device::cpu());
  CHECK(p.options->gpu_limit == 0);
  p = parse({"--device", "gpu"});
  REQUIRE(p.options);
  CHECK(p.options->device == Device::gpu(0));
  p = parse({"--device", "gpu:3", "--gpu-limit", "64m"});
  REQUIRE(p.options);
  CHECK(p.options->device == Device::gpu(3));
  CHECK(p.options->gpu_limit == 64ull << 20);
  ParseOutcome c = parse(child_arguments(*p.options, AutoClose::off));
  REQUIRE(c.options);
  CHECK(c.options->device == Device::gpu(3));
  CHECK(c.options->gpu_limit == 64ull << 20);
  c = parse(child_arguments(*parse({}).options, AutoClose::on));
  REQUIRE(c.options);
  CHECK(c.options->device == Device::cpu());
  CHECK(c.options->gpu_limit == 0);
  CHECK(parse({"--device", "gpu:15", "--gpu-limit", "1g"}).options->gpu_limit == 1ull << 30);
  CHECK(parse_device("gpu:0") == Device::gpu(0));
  CHECK_FALSE(parse_device("gpu:16"));
  CHECK_FALSE(parse_device("gpu:"));
  CHECK_FALSE(parse_device("GPU"));
  CHECK(device_argument(Device::gpu(2)) == "gpu:2");
  CHECK(device_argument(Device::cpu()) == "cpu");
}

TEST_CASE("options: bad --device and --gpu-limit values are errors naming the option, exit code 2") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
      {{"--device", "tpu"}, "--device: must be cpu, gpu or gpu:N with N from 0 to 15"},
      {{"--device", "gpu:16"}, "--device"},
      {{"--device", "gpu:x"}, "--device"},
      {{"--device", "gpu", "--gpu-limit", "lots"}, "--gpu-limit='lots' is not a size"},
      {{"--device", "gpu", "--gpu-limit", "0"}, "--gpu-limit"},
      {{"--gpu-limit", "64m"}, "--gpu-limit 64m: limits a GPU's memory, so it needs --device gpu or gpu:N"},
  };
  for (const auto& [args, mention] : bad) {
    CAPTURE(args);
    const ParseOutcome p = parse(args);
    CHECK_FALSE(p.options);
    CHECK(p.exit_code == 2);
    CHECK(p.message.find(mention) != std::string::npos);
  }
}

TEST_CASE("options: --cuda-graph needs --device gpu, not with --workspace on; children but the workspace run get it") {
  CHECK_FALSE(parse({}).options->cuda_graph);
  ParseOutcome p = parse({"--device", "gpu", "--cuda-graph"});
  REQUIRE(p.options);
  CHECK(p.options->cuda_graph);
  ParseOutcome c = parse(child_arguments(*p.options, AutoClose::on));
  REQUIRE(c.options);
  CHECK(c.options->cuda_graph);
  c = parse(child_arguments(*p.options, AutoClose::off, /*workspace=*/true));
  REQUIRE(c.options);
  CHECK_FALSE(c.options->cuda_graph);
  CHECK(c.options->workspace);
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
      {{"--cuda-graph"}, "--cuda-graph: CUDA graphs replay GPU work, so it needs --device gpu or gpu:N"},
      {{"--device", "gpu", "--cuda-graph", "--workspace", "on"}, "--cuda-graph: not with --workspace on"},
  };
  for (const auto& [args, mention] : bad) {
    CAPTURE(args);
    const ParseOutcome b = parse(args);
    CHECK_FALSE(b.options);
    CHECK(b.exit_code == 2);
    CHECK(b.message.find(mention) != std::string::npos);
  }
}

TEST_CASE("options: --memory-every N, in children too; a negative N is an error naming it") {
  CHECK(parse({}).options->memory_every == 0);
  ParseOutcome p = parse({"--memory-every", "50"});
  REQUIRE(p.options);
  CHECK(p.options->memory_every == 50);
  ParseOutcome c = parse(child_arguments(*p.options, AutoClose::on));
  REQUIRE(c.options);
  CHECK(c.options->memory_every == 50);
  const ParseOutcome bad = parse({"--memory-every", "-1"});
  CHECK_FALSE(bad.options);
  CHECK(bad.exit_code == 2);
  CHECK(bad.message.find("--memory-every") != std::string::npos);
}

TEST_CASE("options: --compute-threads N, in children too; 0 is an error naming it") {
  CHECK(parse({}).options->compute_threads == 0);  // ndgc::num_threads()'s default
  ParseOutcome p = parse({"--compute-threads", "3"});
  REQUIRE(p.options);
  CHECK(p.options->compute_threads == 3);
  ParseOutcome c = parse(child_arguments(*p.options, AutoClose::on));
  REQUIRE(c.options);
  CHECK(c.options->compute_threads == 3);
  CHECK(c.options->threads == 1);  // --threads keeps its prefetch meaning
  const ParseOutcome bad = parse({"--compute-threads", "0"});
  CHECK_FALSE(bad.options);
  CHECK(bad.exit_code == 2);
  CHECK(bad.message.find("--compute-threads") != std::string::npos);
}

TEST_CASE("options: --model mlp|cnn|lstm, in children too, on any device; a bad name is exit 2") {
  CHECK(parse({}).options->model == "mlp");
  for (const char* name : {"cnn", "lstm"}) {
    ParseOutcome p = parse({"--model", name});
    REQUIRE(p.options);
    CHECK(p.options->model == name);
    ParseOutcome c = parse(child_arguments(*p.options, AutoClose::on));
    REQUIRE(c.options);
    CHECK(c.options->model == name);
    ParseOutcome gpu = parse({"--model", name, "--device", "gpu:1"});
    REQUIRE(gpu.options);
    CHECK(child_arguments(*gpu.options, AutoClose::off)[1] == name);
  }
  const ParseOutcome bad = parse({"--model", "resnet"});
  CHECK_FALSE(bad.options);
  CHECK(bad.exit_code == 2);
  CHECK(bad.message.find("--model") != std::string::npos);
}

TEST_CASE("options: --precision fp32|bf16|fp16, in children too; an unknown value is exit 2 listing the choices") {
  CHECK(parse({}).options->precision == training::Precision::float32);
  for (const char* name : {"bf16", "fp16"}) {
    ParseOutcome p = parse({"--precision", name, "--compare"});
    REQUIRE(p.options);
    CHECK(training::to_string(p.options->precision) == name);
    ParseOutcome c = parse(child_arguments(*p.options, AutoClose::on));
    REQUIRE(c.options);
    CHECK(c.options->precision == p.options->precision);
  }
  const ParseOutcome bad = parse({"--precision", "fp8"});
  CHECK_FALSE(bad.options);
  CHECK(bad.exit_code == 2);
  CHECK(bad.message.find("--precision") != std::string::npos);
  CHECK(bad.message.find("bf16") != std::string::npos);
  CHECK(bad.message.find("fp16") != std::string::npos);
  const ParseOutcome graphed = parse({"--precision", "fp16", "--cuda-graph", "--device", "gpu"});
  CHECK_FALSE(graphed.options);
  CHECK(graphed.exit_code == 2);
  CHECK(graphed.message.find("fp16") != std::string::npos);
}

TEST_CASE("results: the precision survives JSON and reaches the CSV and the table; a document without it is fp32") {
  RunResult r = fake_run("on", {1.0, 1.0}, {200, 200});
  r.precision = "bf16";
  CHECK(run_from_json(to_json(r)).precision == "bf16");
  const std::string csv = to_csv({r});
  CHECK(csv.find(",precision\n") != std::string::npos);
  CHECK(csv.find(",bf16\n") != std::string::npos);
  CHECK(format_table({r}).find("auto-close on, bf16") != std::string::npos);
  CHECK(format_report({r}).find("loss scale") == std::string::npos);
  r.precision = "fp16";
  r.loss_scaling = ScalerFigures{32768.0, 3};
  CHECK(run_from_json(to_json(r)).loss_scaling == r.loss_scaling);
  CHECK(format_report({r}).find("fp16 loss scale 32768 at the end; 3 steps skipped") != std::string::npos);
  nlohmann::json old = nlohmann::json::parse(to_json(r));
  old.erase("precision");
  CHECK(run_from_json(old.dump()).precision == "fp32");
}

TEST_CASE("results: the model survives JSON and reaches the report; a document without it is an MLP run") {
  RunResult r;
  r.model = "cnn";
  r.config = "on";
  r.leak = "none";
  CHECK(run_from_json(to_json(r)).model == "cnn");
  CHECK(format_report({r}).find("--model cnn") != std::string::npos);
  nlohmann::json old = nlohmann::json::parse(to_json(r));
  old.erase("model");
  CHECK(run_from_json(old.dump()).model == "mlp");
}

TEST_CASE("results: the compute thread count survives JSON and reaches the report") {
  RunResult r = fake_run("on", {1.0, 1.0}, {200, 200});
  r.compute_threads = 4;
  CHECK(run_from_json(to_json(r)).compute_threads == 4);
  CHECK(format_report({r}).find("4 compute threads") != std::string::npos);
}

TEST_CASE("results: GPU figures and a failure survive JSON; a document without them reads as a CPU run that finished") {
  const RunResult r = died_in_epoch_3();
  CHECK(run_from_json(to_json(r)) == r);
  nlohmann::json old = nlohmann::json::parse(to_json(fake_run("off", {1, 2}, {3, 4})));
  old.erase("device");
  old.erase("failure");
  for (auto& e : old.at("epochs")) e.erase("gpu_allocated_bytes"), e.erase("gpu_reserved_bytes"), e.erase("gpu_peak_bytes");
  const RunResult back = run_from_json(old.dump());
  CHECK(back == fake_run("off", {1, 2}, {3, 4}));
  CHECK(back.device == "cpu");
  CHECK_FALSE(back.failure);
  CHECK(where_it_died(*r.failure) == "OutOfMemory in epoch 3, training step 42 of 200");
}

TEST_CASE("CSV: GPU columns beside host memory on a GPU run; a failure column and row for a run that died") {
  const std::string cpu = to_csv({fake_run("off", {1, 1}, {1, 1})});
  CHECK(cpu.find("gpu_") == std::string::npos);
  CHECK(cpu.find("failure") == std::string::npos);

  const std::vector<RunResult> runs{died_in_epoch_3(), fake_gpu_run("on", {1, 1, 1}, {10, 10, 10})};
  const std::vector<std::string> lines = lines_of(to_csv(runs));
  REQUIRE(lines.size() == 1 + 3 + 3);  // off: 2 epochs and the row it died in; on: 3 epochs
  CHECK(lines[0] ==
        "config,epoch,seconds,bytes_in_use,mib_in_use,peak_bytes,peak_mib,gpu_allocated_bytes,gpu_allocated_mib,"
        "gpu_reserved_bytes,gpu_reserved_mib,gpu_peak_bytes,gpu_peak_mib,live_arrays,reclaimed,leaked_handles,"
        "train_loss,test_accuracy,precision,failure");
  const std::size_t columns = count(lines[0], ",") + 1;
  CHECK(lines[2].starts_with("off,2,1.500000,104857600,100.000,104858600,100.001,20971520,20.000,25165824,24.000,"
                             "22020096,21.000,130,0,0,0.500000,0.812500,"));
  CHECK(lines[3] == "off,3,,,,,,,,,,,,,,,,,,\"OutOfMemory in epoch 3, training step 42 of 200: OutOfMemory: cannot "
                    "allocate 1.0 MiB (1048576 bytes) on gpu(0): over the limit of 24.0 MiB\"");
  CHECK(count(lines[3].substr(0, lines[3].find('"')), ",") + 1 == columns);  // the quoted cell is the last
  for (std::size_t i = 1; i < lines.size(); ++i)
    if (i != 3) CHECK(count(lines[i], ",") + 1 == columns);
}

TEST_CASE("table: GPU columns on a GPU run, and the row of the epoch a run died in") {
  const std::vector<RunResult> runs{died_in_epoch_3(), fake_gpu_run("on", {1, 1, 1}, {10, 10, 10})};
  const std::vector<std::string> lines = lines_of(format_table(runs));
  REQUIRE(lines.size() == 3 + 3);
  CHECK(count(lines[1], "GPU MiB") == 2);
  CHECK(count(lines[1], "reserved") == 2);
  CHECK(count(lines[1], "GPU peak") == 2);
  for (const std::string& l : lines) CHECK(l.size() == lines[2].size());  // aligned, the failure's cell too
  // epoch 2, off: host 100.0 MiB, GPU 20.0 allocated, 24.0 reserved, 21.0 peak.
  CHECK(lines[4].find("   100.0    100.0     20.0     24.0     21.0") != std::string::npos);
  CHECK(lines[5].find("died: OutOfMemory, training step 42 of 200") != std::string::npos);
  CHECK(lines[5].find("     10.0     14.0     11.0") != std::string::npos);  // on, epoch 3
  CHECK(format_table({fake_run("off", {1}, {1})}).find("GPU") == std::string::npos);

  const std::string report = format_report(runs);
  CAPTURE(report);
  CHECK(report.find(", on gpu:0") != std::string::npos);
  CHECK(report.find("auto-close off:   died of OutOfMemory in epoch 3, training step 42 of 200: OutOfMemory: cannot "
                    "allocate 1.0 MiB") != std::string::npos);
  CHECK(report.find("gpu:0 memory +0.0 MiB") != std::string::npos);  // the on run's summary
  CHECK(report.find("auto-close off: no creation site grew") == std::string::npos);  // no claim about a dead run
}

TEST_CASE("SVG chart: a third panel of GPU memory on a GPU run; a run that died is marked") {
  const std::vector<RunResult> runs{died_in_epoch_3(), fake_gpu_run("on", {1, 1, 1}, {10, 10, 10})};
  const std::string svg = render_chart(runs, "gpu");
  std::string why;
  CHECK_MESSAGE(well_formed_xml(svg, why), why);
  CHECK(count(svg, "<polyline ") == 6);
  CHECK(count(svg, "data-panel=\"gpu\"") == 2);
  CHECK(svg.find("width=\"1440\"") != std::string::npos);
  CHECK(count(svg, "data-failure=\"off\"") == 3);  // in each panel
  CHECK(render_chart({fake_run("off", {1, 2}, {1, 2})}, "cpu").find("width=\"960\"") != std::string::npos);
}

// ---- end to end ------------------------------------------------------------------

namespace {

// The lines of leak.cpp marked "// LEAK".
std::vector<int> leak_lines() {
  std::ifstream in(NDGC_TRAIN_LEAK_SOURCE);
  std::vector<int> lines;
  int n = 0;
  for (std::string l; std::getline(in, l);) {
    ++n;
    if (l.find("// LEAK") != std::string::npos) lines.push_back(n);
  }
  return lines;
}

// `env`: assignments put before the command ("NDGC_MAX_BYTES=3m").
int run_program(const std::string& args, const fs::path& log, const std::string& env = "") {
  const std::string cmd = fmt::format("{} '{}' {} > '{}' 2>&1", env, NDGC_TRAIN_BINARY, args, log.string());
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ndgc-train-test-" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST_CASE("ndgc-train: errors give a message and a non-zero exit, no crash") {
  TempDir tmp;
  const fs::path log = tmp.path / "log.txt";
  CHECK(run_program("--epochs 0", log) == 2);
  CHECK(read_text(log).find("--epochs") != std::string::npos);
  CHECK(run_program(fmt::format("--data-dir '{}' --out '{}'", (tmp.path / "nothing").string(), tmp.path.string()),
                    log) == 1);
  CHECK(read_text(log).find("Fashion-MNIST is not in") != std::string::npos);
  CHECK(run_program(fmt::format("--compare --data-dir '{}' --out '{}'", (tmp.path / "nothing").string(),
                                tmp.path.string()),
                    log) == 1);
  CHECK(read_text(log).find("Fashion-MNIST is not in") != std::string::npos);
  CHECK(run_program(fmt::format("--data-dir '{}' --out '{}'", (tmp.path / "nothing").string(), tmp.path.string()), log,
                    "NDGC_NUM_THREADS=lots") != 0);
  CHECK(read_text(log).find("NDGC_NUM_THREADS='lots' is not a thread count") != std::string::npos);
  CHECK(run_program(fmt::format("--data-dir '{}' --out '{}'", (tmp.path / "nothing").string(), tmp.path.string()), log,
                    "NDGC_HOST_CACHE_BYTES=lots") != 0);
  CHECK(read_text(log).find("NDGC_HOST_CACHE_BYTES") != std::string::npos);
  CHECK(run_program(fmt::format("--data-dir '{}' --out '{}'", (tmp.path / "nothing").string(), tmp.path.string()), log,
                    "NDGC_CPU_GEMM=blas") != 0);
  CHECK(read_text(log).find("NDGC_CPU_GEMM='blas' is not understood: use onednn or eigen") != std::string::npos);
  CHECK(run_program(fmt::format("--data-dir '{}' --out '{}'", (tmp.path / "nothing").string(), tmp.path.string()), log,
                    "NDGC_GPU_CONV=winograd") != 0);
  CHECK(read_text(log).find("NDGC_GPU_CONV='winograd' is not understood: use cudnn or im2col") != std::string::npos);
}

TEST_CASE("ndgc-train --device gpu:N that this machine cannot use: exit 2, one line naming the device and why") {
  // gpu:15: unusable on any machine of fewer than 16 GPUs, whether the CUDA
  // engine is not linked, sees no GPU, or sees some (index out of range).
  TempDir tmp;
  const fs::path log = tmp.path / "log.txt";
  for (const std::string args : {"--device gpu:15", "--compare --leak model --device gpu:15 --gpu-limit 64m"}) {
    CAPTURE(args);
    CHECK(run_program(fmt::format("{} --data-dir '{}' --out '{}'", args, (tmp.path / "nothing").string(),
                                  (tmp.path / "out").string()),
                      log) == 2);
    const std::string output = read_text(log);
    CHECK(count(output, "\n") == 1);
    CHECK(output.starts_with("ndgc-train --device gpu:15: gpu(15) is not available: "));
    const bool says_why = output.find("not linked") != std::string::npos ||
                          output.find("no usable GPU") != std::string::npos ||
                          output.find("out of range") != std::string::npos;
    CHECK(says_why);
    CHECK_FALSE(fs::exists(tmp.path / "out"));  // nothing was started
  }
}

TEST_CASE("ndgc-train --compare --leak model: growth off, flat on, the leaking line named, files written") {
  if (!data::FashionMnist::available()) {
    MESSAGE("skipped: Fashion-MNIST is not installed (tools/bootstrap installs dataset-fashion-mnist)");
    return;
  }
  TempDir tmp;
  const fs::path log = tmp.path / "log.txt";
  const int rc =
      run_program(fmt::format("--compare --leak model --limit-batches 200 --epochs 3 --out '{}'", tmp.path.string()), log);
  const std::string output = read_text(log);
  INFO(output);
  REQUIRE(rc == 0);

  for (const char* f : {"compare.csv", "compare.json", "compare.svg"}) CHECK(fs::file_size(tmp.path / f) > 0);
  std::string why;
  CHECK_MESSAGE(well_formed_xml(read_text(tmp.path / "compare.svg"), why), why);

  const nlohmann::json doc = nlohmann::json::parse(read_text(tmp.path / "compare.json"));
  std::vector<RunResult> runs;
  for (const auto& r : doc.at("runs")) runs.push_back(run_from_json(r.dump()));
  REQUIRE(runs.size() >= 2);
  CHECK(count(read_text(tmp.path / "compare.csv"), "\n") == 1 + 3 * runs.size());
  CHECK(count(read_text(tmp.path / "compare.svg"), "<polyline ") == 2 * runs.size());

  for (const RunResult& r : runs) {
    CAPTURE(r.config);
    REQUIRE(r.epochs.size() == 3);
    CHECK(r.batches_per_epoch == 200);
    if (r.config == "off") {
      for (std::size_t e = 1; e < r.epochs.size(); ++e) {
        CHECK(r.epochs[e].live_arrays > r.epochs[e - 1].live_arrays);
        CHECK(r.epochs[e].bytes_in_use > r.epochs[e - 1].bytes_in_use);
      }
      REQUIRE(r.growth);
      REQUIRE_FALSE(r.growth->groups.empty());
      // Every growing site is a LEAK line of leak.cpp, and each of those lines grew.
      const std::vector<int> lines = leak_lines();
      REQUIRE(lines.size() == 2);
      for (int line : lines) {
        bool found = false;
        for (const debug::DiffGroup& g : r.growth->groups)
          found |= g.site.file.ends_with("leak.cpp") && int(g.site.line) == line && g.array_growth() > 0;
        CHECK_MESSAGE(found, "leak.cpp:" << line);
        CHECK(output.find(fmt::format("leak.cpp:{}", line)) != std::string::npos);  // in the printed report
      }
      for (const debug::DiffGroup& g : r.growth->groups) CHECK(g.site.file.ends_with("leak.cpp"));
    } else {
      // on, trace and workspace: bytes in use at the end of epochs 2.. within 2 MiB of each other.
      for (std::size_t e = 1; e < r.epochs.size(); ++e)
        for (std::size_t f = 1; f < r.epochs.size(); ++f)
          CHECK(std::abs(double(r.epochs[e].bytes_in_use) - double(r.epochs[f].bytes_in_use)) <= 2 * kMiB);
      if (r.config == "workspace") {
        // Auto-close off: the leaked results that took storage sit in the
        // step's arena and close when the next step recycles it; the views of
        // gradients (flatten) take none, so they stay in the model's manager
        // and are what still grows: the second LEAK line only, with no bytes.
        REQUIRE(r.workspace);
        CHECK(r.workspace->capacity > 0);
        CHECK(r.workspace->cycles > 0);
        CHECK(r.epochs.back().reclaimed == 0);
        REQUIRE(r.growth);
        REQUIRE_FALSE(r.growth->groups.empty());
        const std::vector<int> lines = leak_lines();
        REQUIRE(lines.size() == 2);
        for (const debug::DiffGroup& g : r.growth->groups) {
          CHECK(g.site.file.ends_with("leak.cpp"));
          CHECK(int(g.site.line) == lines[1]);
          CHECK(g.array_growth() > 0);
          CHECK(g.byte_growth() == 0);
        }
        // Fewer arrays pile up than with auto-close off: the results closed.
        const auto off = std::find_if(runs.begin(), runs.end(), [](const RunResult& o) { return o.config == "off"; });
        REQUIRE(off != runs.end());
        CHECK(r.epochs.back().live_arrays < off->epochs.back().live_arrays);
      } else {
        CHECK(r.epochs.back().live_arrays == r.epochs[1].live_arrays);
        CHECK(r.epochs.back().reclaimed > 0);
        CHECK((!r.growth || r.growth->groups.empty()));
      }
    }
  }
  // Same seed, same computation: the same accuracy whatever auto-close does.
  for (const RunResult& r : runs) CHECK(r.epochs.back().test_accuracy == runs.front().epochs.back().test_accuracy);
  CHECK(output.find("Leak report, auto-close off") != std::string::npos);
  CHECK(output.find("workspace:        arena ") != std::string::npos);
}

TEST_CASE("ndgc-train --compare: a run that dies of OutOfMemory is reported, and the other configurations still run") {
  // On the host, so it runs everywhere: NDGC_MAX_BYTES bounds each child's
  // host memory as --gpu-limit bounds a GPU's (the same OutOfMemory path).
  SmallData data;
  TempDir tmp;
  const fs::path log = tmp.path / "log.txt";
  const std::string common = fmt::format("--compare --leak model --epochs 4 --batch-size 16 --seed 7 --data-dir '{}' --out '{}'",
                                         data.dir.string(), tmp.path.string());
  auto read_runs = [&] {
    const nlohmann::json doc = nlohmann::json::parse(read_text(tmp.path / "compare.json"));
    std::vector<RunResult> runs;
    for (const auto& r : doc.at("runs")) runs.push_back(run_from_json(r.dump()));
    return runs;
  };
  auto find = [](const std::vector<RunResult>& runs, const std::string& config) -> const RunResult& {
    for (const RunResult& r : runs)
      if (r.config == config) return r;
    FAIL("no run " << config);
    return runs.front();
  };
  // Sizes first, without a limit: the auto-close run's peak, the leak's growth per epoch.
  REQUIRE(run_program(common, log) == 0);
  const std::vector<RunResult> free_runs = read_runs();
  const RunResult& on = find(free_runs, "on");
  const RunResult& off = find(free_runs, "off");
  REQUIRE(off.epochs.size() == 4);
  std::uint64_t peak = 0;
  for (const EpochRow& e : on.epochs) peak = std::max(peak, e.peak_bytes);
  const std::uint64_t growth = off.epochs[2].bytes_in_use - off.epochs[1].bytes_in_use;
  REQUIRE(growth > 0);

  const std::uint64_t limit = peak + growth + growth / 2;
  const int rc = run_program(common, log, fmt::format("NDGC_MAX_BYTES={}", limit));
  const std::string output = read_text(log);
  INFO(output);
  CHECK(rc == 0);  // every configuration gave a result
  const std::vector<RunResult> runs = read_runs();
  CHECK(runs.size() == free_runs.size());
  const RunResult& died = find(runs, "off");
  REQUIRE(died.failure);
  CHECK(died.failure->error == "OutOfMemory");
  CHECK(died.failure->epoch >= 2);
  CHECK(died.epochs.size() == std::size_t(died.failure->epoch - 1));
  CHECK(died.failure->message.find("OutOfMemory") != std::string::npos);
  const RunResult& finished = find(runs, "on");
  CHECK_FALSE(finished.failure);
  CHECK(finished.epochs.size() == 4);
  CHECK(output.find("auto-close off:   died of OutOfMemory in epoch") != std::string::npos);
  CHECK(output.find("died: OutOfMemory, ") != std::string::npos);  // the table's row
  const std::string csv = read_text(tmp.path / "compare.csv");
  CHECK(csv.find(",failure\n") != std::string::npos);
  CHECK(csv.find("\"OutOfMemory in epoch ") != std::string::npos);
}

// tools/CMakeLists.txt: ndgc-train does not link ndgc::trace (Boehm's heap
// would take every `new` of every run) and hands trace runs to ndgc-train-trace.
TEST_CASE("ndgc-train runs off Boehm's heap and hands --autoclose trace to ndgc-train-trace") {
  const fs::path plain = NDGC_TRAIN_BINARY, traced = fs::path(NDGC_TRAIN_BINARY).parent_path() / "ndgc-train-trace";
  if (!fs::exists(traced)) {
    MESSAGE("skipped: this build has no ndgc-train-trace (no Boehm GC, or a sanitizer build)");
    return;
  }
  // The dynamic symbol tables name what each program takes from libgc.
  CHECK(read_text(plain).find("GC_malloc_uncollectable") == std::string::npos);
  CHECK(read_text(traced).find("GC_malloc_uncollectable") != std::string::npos);
  if (!data::FashionMnist::available()) {
    MESSAGE("skipped the run: Fashion-MNIST is not installed (tools/bootstrap installs dataset-fashion-mnist)");
    return;
  }
  TempDir tmp;
  const fs::path log = tmp.path / "log.txt";
  const int rc = run_program(
      fmt::format("--autoclose trace --leak model --limit-batches 8 --epochs 1 --out '{}'", tmp.path.string()), log);
  const std::string output = read_text(log);
  INFO(output);
  CHECK(rc == 0);
  CHECK(output.find("trace detector:") != std::string::npos);  // only the detector's program reports it
  CHECK(fs::exists(tmp.path / "run-trace.json"));
}

}  // namespace ndgc::train_tool
