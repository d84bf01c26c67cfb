// ndgc::serving: a KServe v2 model server to embed (tools/ndgc-serve is a thin
// main over it). Link ndgc::serving.
//
//   LoadedModel fashion = load_model_file("mlp.model", "fashion");
//   serving::ServerOptions options;                 // 127.0.0.1:8080, 1 I/O thread, 1 worker
//   options.port = 0;                               // any free port
//   serving::Server server(options);
//   server.add_model("fashion", fashion.model, 784, 10);
//   unsigned short port = server.start();           // listening
//   ...                                             // POST /v2/models/fashion/infer
//   bool clean = server.shutdown(std::chrono::seconds(30));  // drain, then stop
//
// Endpoints (KServe v2 REST, docs/serving.md): GET /v2/health/live,
// /v2/health/ready, /v2/models/NAME/ready, /v2, /v2/models/NAME (metadata,
// -1 for the batch axis), POST /v2/models/NAME/infer (JSON, nested or flat
// data), GET /metrics (Prometheus text). Errors are the status and
// {"error": "..."}: 400 a bad request, 404 an unknown model or path, 405 the
// wrong method, 413 a body over the limit, 503 with Retry-After when the
// queue is full or the server is shutting down.
//
// A model takes named tensors and gives named tensors, each with a dtype and
// a batch axis first: add_model(name, model, inputs, outputs) with their
// TensorInfo, or add_model(name, model, n, m) for ndgc's model files (one
// FP32 input "input" [-1, n], one FP32 output "output" [-1, m]). A request
// gives every input, with the same rows; the response gives every output, or
// those it asks for. KServe datatypes: FP32, FP64, FP16, BF16, INT32, INT64, UINT8 and
// BOOL, as ndgc's dtypes. The server never runs a forward pass on an
// I/O thread: requests go through a bounded queue to a dynamic batcher and
// `workers` inference threads; each batch runs in a context manager under
// the model's, closed once its responses are handed over (see Note [A
// batch's memory] in src/serving/batcher.hpp).
//
// Thread-safety: add_model before start(); start, shutdown and the
// destructor from one thread. The models must outlive the server.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ndgc/model.hpp"

namespace ndgc::serving {

// A tensor a served model takes or gives: its name, dtype and the shape of
// one row (the dimensions after the batch axis, which requests choose).
struct TensorInfo {
  std::string name;
  DataType dtype = DataType::float32;
  std::vector<std::int64_t> row_shape;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 8080;  // 0: any free port
  int io_threads = 1;
  // How long an I/O thread that ran out of work polls for more before it
  // sleeps: less latency at low load for a little CPU; 0: never polls.
  std::int64_t io_poll_us = 25;
  int workers = 1;
  std::int64_t max_batch_size = 32;
  std::int64_t max_queue_delay_us = 0;
  std::size_t max_queue = 1000;
  std::uint64_t max_body_bytes = 64ull << 20;
  std::uint32_t max_header_bytes = 16u << 10;
  std::chrono::milliseconds read_timeout{30000};  // a request's read, and keep-alive idle
  bool workspace = false;        // each worker's batches in one reused workspace
  bool leak_translator = false;  // the demo leak (DJL 2766): one array per request in the model's manager
  // float16 or bfloat16: every forward pass runs in an Autocast region of that
  // dtype (ndgc/autocast.hpp), and each output is converted to its declared
  // dtype, so requests and responses keep their datatypes. Cast the model's
  // parameters once before serving (Model::cast) to hold them in 16 bits.
  DataType precision = DataType::float32;
  // Non-empty: GET /v2/debug/memory (the manager tree), POST /v2/debug/snapshot,
  // GET /v2/debug/diff (debug::diff since that snapshot), each requiring
  // "Authorization: Bearer TOKEN". Empty: those paths are 404.
  std::string admin_token;
};

// The threads inside each op (ndgc::set_num_threads) for a server of
// `models` models on `cores` cores: what the I/O threads leave, shared by
// every model's workers, at least 1. A pool that also took the I/O threads'
// cores made batching slower than none on two cores (perf/RESULTS.md).
int compute_threads_for(const ServerOptions& options, int models, int cores);

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  // shutdown(0) if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // A model served as NAME. InvalidArgument after start(), for a name used
  // twice, for no inputs or outputs, a negative dimension or two tensors of
  // one name.
  void add_model(const std::string& name, Model& model, std::vector<TensorInfo> inputs,
                 std::vector<TensorInfo> outputs);
  // One FP32 input "input" [-1, inputs], one FP32 output "output" [-1, outputs].
  void add_model(const std::string& name, Model& model, std::int64_t inputs, std::int64_t outputs);
  // Binds and starts the threads; returns the port (the one chosen for port 0).
  unsigned short start();
  unsigned short port() const noexcept;
  // Graceful shutdown: readiness turns 503, new connections and new infer
  // requests are refused, queued and in-flight requests are answered; then
  // the threads stop. True when everything was answered within `timeout`.
  bool shutdown(std::chrono::milliseconds timeout);
  // The /metrics text.
  std::string metrics() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ndgc::serving
