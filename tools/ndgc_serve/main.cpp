// ndgc-serve: serves model files (ndgc-train --save) and ONNX graphs over KServe v2 HTTP.
// A thin main over ndgc::serving (include/ndgc/serving.hpp).
//
//   ndgc-serve --model fashion=mlp.model --model resnet=resnet18.onnx --port 8080
//   curl -s localhost:8080/v2/models/fashion/infer -d '{"inputs":[{"name":"input","shape":[1,784],"datatype":"FP32","data":[...]}]}'
//
// Its first line on stdout, once it accepts connections, is
// `listening on http://HOST:PORT`. On SIGTERM or SIGINT it shuts down
// gracefully (Note [Shutdown order] in src/serving/server.cpp), closes the
// models and exits 0 when no array is left, else prints a leak report naming
// the creation sites and exits 1. --autoclose trace runs in ndgc-serve-trace
// (built beside it, the same main linked with the tracing detector), which
// this program becomes with exec. Exit codes: 0 a clean shutdown, 1 leaks,
// an unanswered request at --exit-timeout, or a model that cannot be
// loaded, 2 a bad command line.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <iostream>
#include <list>
#include <optional>

#include <CLI/CLI.hpp>

#include <ndgc/debug.hpp>
#include <ndgc/device.hpp>
#include <ndgc/error.hpp>
#include <ndgc/gc.hpp>
#include <ndgc/memory.hpp>
#include <ndgc/model_file.hpp>
#include <ndgc/parallel.hpp>
#include <ndgc/serving.hpp>
#include <ndgc/training.hpp>
#if NDGC_SERVE_HAVE_TRACE
#include <ndgc/trace.hpp>
#endif

#include "common/device_option.hpp"
#include "common/program_beside.hpp"
#include "served_model.hpp"

namespace {

struct Options {
  std::vector<std::string> models;  // NAME=FILE
  ndgc::serving::ServerOptions server;
  std::string max_body = "64m";
  int exit_timeout_s = 30;
  std::string autoclose = "off";
  std::string workspace = "off";
  std::string leak = "none";
  std::string admin_token;
  std::string device = "cpu";
  int compute_threads = 0;  // 0: the machine's intra-op threads shared by every model's workers
  std::string precision = "fp32";
};

#if NDGC_SERVE_HAVE_TRACE
constexpr bool kTraceLinked = true;
#else
constexpr bool kTraceLinked = false;
#endif

// SIGTERM and SIGINT, which main takes with sigwait.
sigset_t termination_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

// Parses the command line into `o`; an exit code when the program should stop.
std::optional<int> parse_command_line(int argc, char** argv, Options& o) {
  CLI::App app{"ndgc-serve: serves ndgc model files (ndgc-train --save) over the KServe v2 HTTP/REST protocol",
               "ndgc-serve"};
  app.option_defaults()->always_capture_default();
  app.add_option("--model", o.models,
                 "NAME=FILE: serve FILE as NAME (repeatable): an ndgc model file (ndgc-train --save) or an ONNX "
                 "graph with a dynamic first (batch) axis; the content decides which")
      ->required();
  app.add_option("--host", o.server.host, "Address to bind");
  app.add_option("--port", o.server.port, "Port (0: any free port)");
  app.add_option("--device", o.device,
                 "Where the models run: cpu, gpu (gpu:0) or gpu:N; requests are decoded on the host, each batch is "
                 "copied over and its outputs back")
      ->check(ndgc::tools::device_validator());
  app.add_option("--io-threads", o.server.io_threads, "Threads running the HTTP connections")->check(CLI::Range(1, 256));
  app.add_option("--io-poll-us", o.server.io_poll_us,
                 "Microseconds an I/O thread that ran out of work polls for more before it sleeps (0: never)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1'000'000}));
  app.add_option("--workers", o.server.workers, "Inference threads per model")->check(CLI::Range(1, 256));
  app.add_option("--compute-threads", o.compute_threads,
                 "Threads inside each op (ndgc::set_num_threads). Default: ndgc::num_threads() (NDGC_NUM_THREADS, "
                 "else the cores) less the I/O threads, divided by the inference threads of all models, at least 1, "
                 "so that busy workers, the intra-op pool and the connections do not oversubscribe the machine")
      ->check(CLI::Range(1, 4096));
  app.add_option("--max-batch-size", o.server.max_batch_size, "Rows per forward pass at most")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  app.add_option("--max-queue-delay-us", o.server.max_queue_delay_us, "How long a batch waits for more rows")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{10'000'000}));
  app.add_option("--max-queue", o.server.max_queue, "Requests waiting at most; more are answered 503");
  app.add_option("--max-body-bytes", o.max_body, "Largest request body (k, m, g suffixes); larger is 413");
  app.add_option("--exit-timeout", o.exit_timeout_s, "Seconds to answer in-flight requests on SIGTERM/SIGINT")
      ->check(CLI::Range(0, 3600));
  app.add_option("--autoclose", o.autoclose, "off, on or trace")->check(CLI::IsMember({"off", "on", "trace"}));
  app.add_option("--workspace", o.workspace, "on: each worker's batches in one reused workspace")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--admin-token", o.admin_token, "Enables the /v2/debug endpoints, which then require this token");
  app.add_option("--leak", o.leak, "none, or translator: the demo leak (DJL 2766), one array per request in the model's manager")
      ->check(CLI::IsMember({"none", "translator"}));
  app.add_option("--precision", o.precision,
                 "fp32, or bf16 / fp16: the model's float32 parameters converted once at load, every forward pass "
                 "in 16 bits (matmul, conv, linear, LSTM) with float32 softmax and norms; requests and responses "
                 "keep their datatypes")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  try {
    app.parse(argc, argv);
    o.server.precision = ndgc::training::autocast_dtype(*ndgc::training::parse_precision(o.precision));
    o.server.max_body_bytes = ndgc::memory::parse_size(o.max_body, "--max-body-bytes");
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const ndgc::InvalidArgument& e) {
    std::cerr << "ndgc-serve: " << e.what() << '\n';
    return 2;
  }
  return std::nullopt;
}

// Loads the models, serves them until SIGTERM or SIGINT, shuts down: the exit status.
int serve(const Options& o, ndgc::Device device, const sigset_t& signals) {
  std::list<ndgc::serve_tool::ServedModel> models;  // outlive the server (declared first)
  ndgc::serving::Server server(o.server);
  try {
    for (const std::string& spec : o.models) {
      const std::size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
        std::cerr << "ndgc-serve: --model " << spec << ": expected NAME=FILE\n";
        return 2;
      }
      auto& m = models.emplace_back(spec.substr(eq + 1), spec.substr(0, eq), device);  // the content decides the format
      if (o.server.precision != ndgc::DataType::float32) m.model().cast(o.server.precision);  // once, at load
      server.add_model(m.model().name(), m.model(), m.inputs(), m.outputs());
    }
    const unsigned short port = server.start();
    std::cout << "listening on http://" << o.server.host << ':' << port << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "ndgc-serve: " << e.what() << '\n';
    return 1;
  }
  int received = 0;
  sigwait(&signals, &received);
  std::cerr << "ndgc-serve: " << (received == SIGINT ? "SIGINT" : "SIGTERM") << ", shutting down\n";
  if (!server.shutdown(std::chrono::seconds(o.exit_timeout_s))) {
    std::cerr << "ndgc-serve: requests were still in flight after --exit-timeout " << o.exit_timeout_s << " s\n";
    return 1;
  }
  return 0;
}  // the server, then the models close

// After the models closed: 0 when no array is left, else a leak report and 1.
int check_nothing_left() {
#if NDGC_SERVE_HAVE_TRACE
  if (ndgc::gc::detector() == ndgc::gc::Detector::trace) ndgc::gc::collect();  // handles no one can reach any more
#endif
  if (ndgc::gc::enabled()) ndgc::gc::sweep();
  const ndgc::debug::Snapshot left = ndgc::debug::snapshot();
  if (left.arrays.empty()) return 0;
  std::cerr << "ndgc-serve: arrays left after the models closed (a leak):\n" << left.to_text(20);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // The signals are taken by sigwait in serve(). Blocked first, before
  // anything can start a thread (a GPU check starts CUDA's): every thread
  // inherits the mask, so none can take a signal and end the process without
  // a graceful shutdown. An exec'd ndgc-serve-trace inherits it too.
  const sigset_t signals = termination_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  Options o;
  if (std::optional<int> code = parse_command_line(argc, argv, o)) return *code;
  if (o.autoclose == "trace" && !kTraceLinked) {
    const std::string why = ndgc::tools::exec_beside("ndgc-serve-trace", argv);  // returns only when it failed
    std::cerr << "ndgc-serve: --autoclose trace runs in ndgc-serve-trace, which cannot start: " << why << '\n';
    return 2;
  }
  const ndgc::Device device = *ndgc::parse_device(o.device);
  try {
    ndgc::check_device(device, "ndgc-serve --device " + o.device);  // the engine linked and the GPU usable
    ndgc::set_num_threads(o.compute_threads > 0 ? o.compute_threads
                                                : ndgc::serving::compute_threads_for(o.server, int(o.models.size()),
                                                                                     ndgc::num_threads()));
  } catch (const ndgc::InvalidArgument& e) {  // no such device, or a malformed NDGC_NUM_THREADS
    std::cerr << "ndgc-serve: " << e.what() << '\n';
    return 2;
  }
  o.server.admin_token = o.admin_token;
  if (o.autoclose == "on") ndgc::gc::enable(ndgc::gc::Detector::refcount);
  if (o.autoclose == "trace") ndgc::gc::enable(ndgc::gc::Detector::trace);
  o.server.workspace = o.workspace == "on";
  o.server.leak_translator = o.leak == "translator";
  const int status = serve(o, device, signals);
  if (status == 2) return status;
  const int leaks = check_nothing_left();
  return status != 0 ? status : leaks;
}
