// ndgc-train's command line: the options, their defaults and checks, in one
// table (CLI11), and the arguments that give a child process the same run.
//
//   ParseOutcome p = parse_options(argc, argv, /*trace_available=*/true);
//   if (!p.options) { std::cerr << p.message; return p.exit_code; }   // --help: exit code 0
//
// Every check happens here, before anything is loaded: a bad value is an
// error message naming the option and an exit code of 2 (CLI11's
// convention for usage errors, which shells and CI report as such).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ndgc/device.hpp>
#include <ndgc/training.hpp>

namespace ndgc::train_tool {

// The three ways to run: auto-close off (DJL semantics), on (reference
// counting), trace (reference counting plus Boehm GC, when linked).
enum class AutoClose { off, on, trace };
std::string_view to_string(AutoClose mode) noexcept;

enum class Leak { none, model };
std::string_view to_string(Leak leak) noexcept;

// A configuration --compare runs: auto-close, and whether each step runs in
// a workspace (Trainer's WorkspaceMode::enabled).
struct RunMode {
  AutoClose autoclose = AutoClose::off;
  bool workspace = false;
};
// "off", "on", "trace"; with a workspace "workspace" (auto-close off) or "on+workspace".
std::string config_name(RunMode mode);

struct Options {
  std::string model = "mlp";  // --model: mlp, cnn or lstm (ndgc/model_file.hpp's architectures)
  std::int64_t epochs = 3;
  std::int64_t batch_size = 32;
  std::int64_t limit_batches = 0;  // per epoch, training and test; 0: all
  std::uint64_t seed = 42;
  int threads = 1;  // >1: batches are prepared ahead on a background thread
  int compute_threads = 0;  // --compute-threads: ndgc::set_num_threads; 0: ndgc::num_threads()'s default
  AutoClose autoclose = AutoClose::off;
  bool workspace = false;  // --workspace on: each step in a cyclic workspace
  Leak leak = Leak::none;
  std::filesystem::path out = "out";
  std::filesystem::path data_dir;  // empty: data::FashionMnist::default_directory()
  bool compare = false;
  bool child = false;  // run by --compare: progress only, no summary
  Device device = Device::cpu();  // --device: where the model trains (the data stays on the host)
  std::uint64_t gpu_limit = 0;    // --gpu-limit: memory::set_limit on that GPU; 0: none
  std::int64_t memory_every = 0;  // --memory-every N: run-<config>-memory.csv every N steps; 0: none
  bool cuda_graph = false;        // --cuda-graph: the training step replayed from a CUDA graph (GPU only)
  training::Precision precision = training::Precision::float32;  // --precision fp32|bf16|fp16
  std::filesystem::path save;     // --save FILE: the trained model as a model file (ndgc/model_file.hpp); empty: none.
                                  // With --compare, the auto-close off run's model
};

struct ParseOutcome {
  std::optional<Options> options;  // empty: print `message` and exit with `exit_code`
  int exit_code = 0;
  std::string message;
};

// `trace_available`: whether this program links ndgc::trace (--autoclose
// trace is an error otherwise).
ParseOutcome parse_options(int argc, const char* const* argv, bool trace_available);
ParseOutcome parse_options(const std::vector<std::string>& args, bool trace_available);  // args without argv[0]

// The arguments (without the program name) of a child run of `options` with
// auto-close `mode`: every option spelled out, so the child does exactly the
// parent's run whatever the defaults.
std::vector<std::string> child_arguments(const Options& options, AutoClose mode, bool workspace = false);

}  // namespace ndgc::train_tool
