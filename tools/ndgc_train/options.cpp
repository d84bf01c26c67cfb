// ndgc-train's options: one CLI11 table with defaults and range checks, and
// the reverse (child_arguments) for --compare's child processes.
#include "options.hpp"

#include <map>
#include <sstream>

#include <CLI/CLI.hpp>

#include <ndgc/error.hpp>
#include <ndgc/memory.hpp>

#include "common/device_option.hpp"

namespace ndgc::train_tool {

std::string_view to_string(AutoClose mode) noexcept {
  switch (mode) {
    case AutoClose::off: return "off";
    case AutoClose::on: return "on";
    case AutoClose::trace: return "trace";
  }
  return "?";
}

std::string config_name(RunMode mode) {
  if (!mode.workspace) return std::string(to_string(mode.autoclose));
  return mode.autoclose == AutoClose::off ? "workspace" : std::string(to_string(mode.autoclose)) + "+workspace";
}

std::string_view to_string(Leak leak) noexcept { return leak == Leak::model ? "model" : "none"; }

ParseOutcome parse_options(int argc, const char* const* argv, bool trace_available) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return parse_options(args, trace_available);
}

ParseOutcome parse_options(const std::vector<std::string>& args, bool trace_available) {
  Options o;
  CLI::App app{
      "ndgc-train: trains a Fashion-MNIST classifier (--model: the MLP 784-128-64-10, a CNN or an LSTM; softmax\n"
      "cross entropy, Adam 1e-3) and reports epoch durations and memory; --compare runs auto-close off, on and\n"
      "trace side by side.",
      "ndgc-train"};
  // A later value wins (tools/demo passes its own arguments after its defaults).
  app.option_defaults()->always_capture_default()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  app.add_option("--model", o.model,
                 "mlp: 784-128-64-10 with ReLU; cnn: two conv 3x3 + BatchNorm + ReLU + max-pool stages (32, 64 "
                 "channels), dropout 0.25, linear 128, linear 10; lstm: the 28 rows as 28 steps, LSTM(128), the last "
                 "step into linear 10; or FILE.onnx: a graph that takes [N, 1, 28, 28] or [N, 784] and gives [N, 10] "
                 "logits (docs/onnx.md), trained as it is; --save then writes the trained graph as ONNX")
      ->check(CLI::IsMember({"mlp", "cnn", "lstm"}) | CLI::ExistingFile);
  app.add_option("--epochs", o.epochs, "Epochs to train")->check(CLI::Range(std::int64_t{1}, std::int64_t{100000}));
  app.add_option("--batch-size", o.batch_size, "Images per batch")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{60000}));
  app.add_option("--limit-batches", o.limit_batches, "At most this many batches per epoch, training and test (0: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", o.seed, "Seed of the parameters' initialisation and of the shuffling");
  app.add_option("--threads", o.threads,
                 "1: batches are made on the training thread; 2 or more: a background thread prepares them ahead")
      ->check(CLI::Range(1, 256));
  app.add_option("--compute-threads", o.compute_threads,
                 "Threads inside each op, the training thread included (ndgc::set_num_threads; default: "
                 "NDGC_NUM_THREADS, else the machine's cores, shared by the ranks under mpirun)")
      ->check(CLI::Range(1, 4096));
  std::vector<std::string> modes{"off", "on"};
  if (trace_available) modes.emplace_back("trace");
  std::string autoclose_name = "off", leak_name = "none", workspace_name = "off";
  auto* autoclose = app.add_option("--autoclose", autoclose_name,
                                   trace_available ? "Auto-close: off, on or trace (Boehm GC detector)"
                                                   : "Auto-close: off or on (this build has no ndgc::trace)")
                        ->check(CLI::IsMember(modes, CLI::ignore_case));
  auto* workspace = app.add_option("--workspace", workspace_name,
                                   "on: each training and test step runs in a cyclic workspace (DL4J's "
                                   "WorkspaceMode.ENABLED, size learned from the first step); off: ordinary memory")
                        ->check(CLI::IsMember({"on", "off"}, CLI::ignore_case));
  app.add_option("--leak", leak_name, "none, or model: each step leaks intermediates into the model's manager")
      ->check(CLI::IsMember({"none", "model"}, CLI::ignore_case));
  app.add_option("--out", o.out, "Directory for the CSV, JSON and SVG files (created)");
  app.add_option("--save", o.save,
                 "Write the trained model to this file, with its architecture (ndgc/model_file.hpp: ndgc-serve loads it)");
  app.add_option("--data-dir", o.data_dir,
                 "Directory with the Fashion-MNIST files (default: $NDGC_DATA_DIR/fashion-mnist or "
                 "/usr/share/datasets/fashion-mnist)");
  app.add_flag("--compare", o.compare,
               trace_available ? "Run auto-close off, on and trace, each in a fresh process, and compare them"
                               : "Run auto-close off and on, each in a fresh process, and compare them")
      ->excludes(autoclose)
      ->excludes(workspace);
  std::string device_name = "cpu", gpu_limit_text;
  app.add_option("--device", device_name,
                 "Where the model trains: cpu, gpu (gpu:0) or gpu:N; the data stays on the host and each batch is "
                 "copied over")
      ->check(tools::device_validator());
  auto* gpu_limit = app.add_option("--gpu-limit", gpu_limit_text,
                                   "Bytes the run may hold on its GPU at once (k, m, g suffixes; memory::set_limit): "
                                   "a run over it ends in OutOfMemory, which the report shows")
                        ->check(CLI::Validator(
                            [](std::string& v) {
                              try {
                                return memory::parse_size(v, "--gpu-limit") > 0 ? std::string()
                                                                                 : std::string("must be more than 0");
                              } catch (const Error& e) {
                                return std::string(e.what());
                              }
                            },
                            "BYTES", "size"));
  app.add_option("--memory-every", o.memory_every,
                 "Also write run-<config>-memory.csv: host and GPU bytes (in use, reserved by the caching "
                 "allocator) every N training steps, and draw bytes by creation site over the steps in "
                 "report.html (0: neither)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--cuda-graph", o.cuda_graph,
               "With --device gpu: capture the training step once in a CUDA graph and replay it for every batch "
               "(not with --workspace on; --compare leaves the workspace run eager)");
  std::string precision_name = "fp32";
  app.add_option("--precision", precision_name,
                 "fp32, or mixed precision: bf16 or fp16 (matmul, conv, linear and the LSTM in 16 bits, master "
                 "weights and optimizer state in float32; fp16 scales the loss)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  app.add_flag("--child", o.child, "(internal) a run started by --compare")->group("");

  // CLI11 parses a vector given last-argument-first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    ParseOutcome r;
    r.exit_code = app.exit(e, out, err) == 0 ? 0 : 2;  // --help is a ParseError too
    r.message = out.str() + err.str();
    if (r.exit_code != 0 && !trace_available && r.message.find("trace") != std::string::npos)
      r.message += "--autoclose trace needs a build that links ndgc::trace (Boehm GC: tools/bootstrap installs libgc-dev)\n";
    return r;
  }
  o.autoclose = autoclose_name == "on" ? AutoClose::on : autoclose_name == "trace" ? AutoClose::trace : AutoClose::off;
  o.leak = leak_name == "model" ? Leak::model : Leak::none;
  o.workspace = workspace_name == "on" || workspace_name == "ON" || workspace_name == "On";
  o.device = *parse_device(device_name);
  o.precision = *training::parse_precision(precision_name);
  if (gpu_limit->count() > 0) {
    if (o.device.is_cpu()) {
      ParseOutcome bad;
      bad.exit_code = 2;
      bad.message = "--gpu-limit " + gpu_limit_text +
                    ": limits a GPU's memory, so it needs --device gpu or gpu:N (for host memory, set NDGC_MAX_BYTES)\n";
      return bad;
    }
    o.gpu_limit = memory::parse_size(gpu_limit_text, "--gpu-limit");
  }
  if (o.cuda_graph && o.precision == training::Precision::float16) {
    ParseOutcome bad;
    bad.exit_code = 2;
    bad.message = "--cuda-graph: not with --precision fp16 (its loss scaler reads the gradients on the host every "
                  "step); bf16 runs in a graph\n";
    return bad;
  }
  if (o.cuda_graph && (o.device.is_cpu() || o.workspace)) {
    ParseOutcome bad;
    bad.exit_code = 2;
    bad.message = o.device.is_cpu() ? "--cuda-graph: CUDA graphs replay GPU work, so it needs --device gpu or gpu:N\n"
                                    : "--cuda-graph: not with --workspace on (both own the step's memory)\n";
    return bad;
  }
  ParseOutcome r;
  r.options = o;
  return r;
}

std::vector<std::string> child_arguments(const Options& o, AutoClose mode, bool workspace) {
  std::vector<std::string> a{"--model",         o.model,
                             "--epochs",        std::to_string(o.epochs),
                             "--batch-size",    std::to_string(o.batch_size),
                             "--limit-batches", std::to_string(o.limit_batches),
                             "--seed",          std::to_string(o.seed),
                             "--threads",       std::to_string(o.threads),
                             "--autoclose",     std::string(to_string(mode)),
                             "--workspace",     workspace ? "on" : "off",
                             "--leak",          std::string(to_string(o.leak)),
                             "--out",           o.out.string(),
                             "--device",        device_argument(o.device),
                             "--precision",     std::string(training::to_string(o.precision))};
  if (o.compute_threads > 0) a.insert(a.end(), {"--compute-threads", std::to_string(o.compute_threads)});
  if (o.gpu_limit > 0) a.insert(a.end(), {"--gpu-limit", std::to_string(o.gpu_limit)});
  if (o.memory_every > 0) a.insert(a.end(), {"--memory-every", std::to_string(o.memory_every)});
  if (!o.data_dir.empty()) a.insert(a.end(), {"--data-dir", o.data_dir.string()});
  if (o.cuda_graph && !workspace) a.emplace_back("--cuda-graph");
  // --compare --save: the first configuration's model (auto-close off, no workspace) is the one saved.
  if (!o.save.empty() && mode == AutoClose::off && !workspace) a.insert(a.end(), {"--save", o.save.string()});
  a.emplace_back("--child");
  return a;
}

}  // namespace ndgc::train_tool
