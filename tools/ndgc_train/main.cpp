// ndgc-train: trains the Fashion-MNIST MLP with auto-close off, on or trace,
// and shows what a leak does to epoch durations and memory, and where it is.
//
//   ndgc-train --leak model --autoclose off --epochs 3     # one run: progress, table, leak report
//   ndgc-train --compare --leak model --epochs 3 --out out # off, on, trace side by side, CSV/JSON/SVG
//   ndgc-train --compare --leak model --device gpu --gpu-limit 64m   # on the GPU; the leak dies of OutOfMemory
//
// Exit codes: 0 success (with --compare: every configuration gave a result,
// a run that died of OutOfMemory included), 1 a run failed (missing data, a
// child that did not finish, a file that cannot be written, a single run that
// died of OutOfMemory), 2 bad command line or a --device this machine
// cannot use.
#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include <ndgc/error.hpp>

#include "compare.hpp"
#include "options.hpp"
#include "outputs.hpp"
#include "rank_support.hpp"
#include "report.hpp"
#include "run.hpp"
#include "svg_chart.hpp"
#include "trace_support.hpp"

namespace {

using namespace ndgc::train_tool;

std::string chart_title(const Options& o, const std::vector<RunResult>& runs) {
  const std::int64_t batches = runs.empty() ? 0 : runs.front().batches_per_epoch;
  return fmt::format("ndgc-train --leak {}: {} epochs of {} batches of {}{}", to_string(o.leak), o.epochs, batches,
                     o.batch_size, o.device.is_cpu() ? "" : " on " + o.device.to_string());
}

// One line naming the device and why it cannot be used, or empty.
std::string device_problem(const Options& o) {
  if (o.device.is_cpu()) return {};
  try {
    ndgc::check_device(o.device, "ndgc-train --device " + device_argument(o.device));
  } catch (const ndgc::InvalidArgument& e) {
    return e.what();
  }
  return {};
}

void print_written(const std::vector<std::filesystem::path>& paths) {
  std::cout << "\nwritten:";
  for (const auto& p : paths) std::cout << ' ' << p.string();
  std::cout << '\n';
}

int compare(const Options& o) {
  check_data(o);  // one clear message rather than three failing children
  std::vector<RunMode> modes{{AutoClose::off, false}, {AutoClose::on, false}};
  if (trace_available()) modes.push_back({AutoClose::trace, false});
  modes.push_back({AutoClose::off, true});  // DL4J's answer: each step in a workspace
  CompareOutcome outcome = run_children(o, modes);
  std::cout << format_report(outcome.runs);
  if (!outcome.runs.empty()) print_written(write_outputs(outcome.runs, o.out, "compare", chart_title(o, outcome.runs)));
  for (const std::string& f : outcome.failures) std::cerr << "ndgc-train: " << f << '\n';
  return outcome.failures.empty() ? 0 : 1;
}

int single(const Options& o) {
  if (job_ranks().rank != 0) {  // under mpirun: rank 0 prints and writes (rank_support.hpp)
    std::ostream quiet(nullptr);
    run_training(o, quiet, false);
    return 0;
  }
  const RunResult r = run_training(o, std::cout, ::isatty(STDOUT_FILENO) == 1);
  const auto json = run_file(o.out, r.config);
  write_file(json, to_json(r));
  if (o.child) return 0;  // the parent prints the comparison
  std::cout << format_report({r});
  const std::filesystem::path stem = o.out / ("run-" + r.config);
  write_file(stem.string() + ".csv", to_csv({r}));
  write_file(stem.string() + ".svg", render_chart({r}, chart_title(o, {r})));
  write_report({r}, o.out, chart_title(o, {r}));
  print_written({stem.string() + ".csv", json, stem.string() + ".svg", o.out / "report.html"});
  return r.failure ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const ParseOutcome parsed = parse_options(argc, argv, trace_available());
  if (!parsed.options) {
    (parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.message;
    return parsed.exit_code;
  }
  const Options& o = *parsed.options;
  if (o.autoclose == AutoClose::trace && !trace_linked()) {  // the detector's run is ndgc-train-trace's
    const std::string why = exec_trace_program(argv);  // returns only when the exec failed
    std::cerr << "ndgc-train: cannot start the trace detector's program: " << why << '\n';
    return 1;
  }
  if (const std::string problem = device_problem(o); !problem.empty()) {  // before any data is read
    std::cerr << problem << '\n';
    return 2;
  }
  try {
    if (o.compare && launched_by_mpirun()) {
      std::cerr << "ndgc-train: --compare starts its configurations as child processes; under mpirun, run one "
                   "configuration per job (--autoclose off|on, --workspace on|off)\n";
      return 2;
    }
    std::error_code ec;
    if (job_ranks().rank == 0) std::filesystem::create_directories(o.out, ec);
    if (ec) {
      std::cerr << fmt::format("ndgc-train: cannot create --out directory {}: {}\n", o.out.string(), ec.message());
      return 1;
    }
    return o.compare ? compare(o) : single(o);
  } catch (const ndgc::Error& e) {
    std::cerr << "ndgc-train: " << e.what() << '\n';
  } catch (const std::exception& e) {
    std::cerr << "ndgc-train: unexpected error: " << e.what() << '\n';
  }
  return 1;
}
