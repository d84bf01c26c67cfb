// Server (ndgc/serving.hpp): the KServe v2 endpoints over HttpServer, Router,
// the codec, one Batcher per model and Metrics.
//
// Note [Shutdown order]
// shutdown() first turns readiness to 503 and refuses new infer requests
// (503 with Retry-After, so a load balancer retries elsewhere), closes the
// listening socket, then closes every batcher's queue: the workers answer
// what is queued. It waits for the HTTP server's in-flight count (requests
// handed to a handler whose response is not yet written) to reach zero, or
// for the timeout. Past the timeout, what is still queued is answered 503
// instead of computed (Batcher::abandon), so shutdown waits for at most the
// batches already running, one per worker, not for a queue of up to
// --max-queue requests. Only then does it stop the I/O threads (after a
// short grace for those 503s to be written) and join the workers. The models
// are the caller's: they close after the server, when no worker can touch them.
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include "ndgc/debug.hpp"
#include "ndgc/error.hpp"
#include "ndgc/serving.hpp"
#include "serving/admin_auth.hpp"
#include "serving/batcher.hpp"
#include "serving/debug_ui.hpp"
#include "serving/http_server.hpp"
#include "serving/kserve_codec.hpp"
#include "serving/metrics.hpp"
#include "serving/router.hpp"

namespace ndgc::serving {

namespace http = boost::beast::http;

namespace {

Response make_response(unsigned status, std::string body, const char* content_type = "application/json") {
  Response r{static_cast<http::status>(status), 11};
  r.set(http::field::server, "ndgc-serve");
  if (!body.empty()) r.set(http::field::content_type, content_type);
  if (status == 503) r.set(http::field::retry_after, "1");
  r.body() = std::move(body);
  return r;
}

Response error_response(unsigned status, const std::string& message) {
  return make_response(status, error_body(message));
}

// [{"name", "datatype", "shape": [-1, ...]}, ...]'s elements: the batch axis is -1.
std::string tensors_metadata(const std::vector<TensorInfo>& tensors) {
  std::string out;
  for (const TensorInfo& t : tensors) {
    std::string shape = "-1";
    for (std::int64_t d : t.row_shape) fmt::format_to(std::back_inserter(shape), ",{}", d);
    out += fmt::format(R"({}{{"name":{},"datatype":"{}","shape":[{}]}})", out.empty() ? "" : ",", json_string(t.name),
                       kserve_datatype(t.dtype), shape);
  }
  return out;
}

void check_tensors(const std::string& model, const std::vector<TensorInfo>& tensors, const char* what) {
  if (tensors.empty()) throw InvalidArgument(fmt::format("Server::add_model('{}'): no {}s", model, what));
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    for (std::int64_t d : tensors[k].row_shape)
      if (d < 0)
        throw InvalidArgument(fmt::format("Server::add_model('{}'): {} '{}' has a dimension {} after the batch axis; "
                                          "each must be fixed",
                                          model, what, tensors[k].name, d));
    if (tensors[k].row_shape.size() + 1 > std::size_t(kMaxRank))
      throw InvalidArgument(fmt::format("Server::add_model('{}'): {} '{}' has more than {} dimensions", model, what,
                                        tensors[k].name, kMaxRank));
    for (std::size_t j = 0; j < k; ++j)
      if (tensors[j].name == tensors[k].name)
        throw InvalidArgument(fmt::format("Server::add_model('{}'): two {}s named '{}'", model, what, tensors[k].name));
  }
}

}  // namespace

struct Server::Impl {
  struct Served {
    Model* model;
    TensorSpec spec;
    ModelMetrics* metrics;
    std::unique_ptr<Batcher> batcher;
  };

  explicit Impl(ServerOptions o) : options(std::move(o)) {}

  ServerOptions options;
  std::map<std::string, Served, std::less<>> models;
  Metrics metrics;
  Router router;
  std::unique_ptr<HttpServer> http;
  std::atomic<bool> ready{false};
  std::atomic<bool> closing{false};
  bool stopped = false;
  std::mutex snapshot_mutex;
  std::optional<debug::Snapshot> snapshot;  // POST /v2/debug/snapshot's, for /v2/debug/diff

  // Answers and counts one request.
  static void answer(Reply& reply, Metrics& metrics, const std::string& model, Response&& response) {
    metrics.record_request(model, response.result_int());
    reply(std::move(response));
  }

  void routes() {
    router.add(http::verb::get, "/v2/health/live", [this](Request&&, const Captures&, Reply reply) {
      answer(reply, metrics, "", make_response(200, ""));
    });
    router.add(http::verb::get, "/v2/health/ready", [this](Request&&, const Captures&, Reply reply) {
      answer(reply, metrics, "", make_response(ready ? 200 : 503, ""));
    });
    router.add(http::verb::get, "/v2/models/{name}/ready", [this](Request&&, const Captures& c, Reply reply) {
      const std::string& name = c.at("name");
      const bool known = models.count(name) > 0;
      answer(reply, metrics, known ? name : "", make_response(!known ? 404 : ready ? 200 : 503, ""));
    });
    router.add(http::verb::get, "/v2", [this](Request&&, const Captures&, Reply reply) {
      answer(reply, metrics, "",
             make_response(200, R"({"name":"ndgc-serve","version":"0.1.0","extensions":["model_repository_metadata"]})"));
    });
    router.add(http::verb::get, "/v2/models/{name}", [this](Request&&, const Captures& c, Reply reply) {
      const std::string& name = c.at("name");
      auto it = models.find(name);
      if (it == models.end()) return answer(reply, metrics, "", error_response(404, fmt::format("unknown model '{}'", name)));
      const TensorSpec& s = it->second.spec;
      answer(reply, metrics, name,
             make_response(200, fmt::format(R"({{"name":{},"versions":["1"],"platform":"ndgc","inputs":[{}],"outputs":[{}]}})",
                                            json_string(name), tensors_metadata(s.inputs), tensors_metadata(s.outputs))));
    });
    router.add(http::verb::post, "/v2/models/{name}/infer",
               [this](Request&& request, const Captures& c, Reply reply) { infer(std::move(request), c.at("name"), std::move(reply)); });
    router.add(http::verb::get, "/metrics", [this](Request&&, const Captures&, Reply reply) {
      metrics.record_request("", 200);  // counted before rendering, so a scrape sees itself
      reply(make_response(200, metrics.render(), "text/plain; version=0.0.4; charset=utf-8"));
    });
  }

  // Note [Admin endpoints]
  // The /v2/debug endpoints exist only with an admin token (they reveal the
  // process's memory and its source sites); each then requires the token in
  // the Authorization header, as "Bearer TOKEN" or as the password of HTTP
  // Basic credentials (admin_auth.hpp), else 401 with a Basic challenge, so
  // a browser opening /v2/debug/ui asks for it. They run on the I/O thread:
  // a snapshot costs ~10 ms per 100k arrays, which an operator asks for
  // rarely, and never touches a model's parameters.
  void admin_routes() {
    auto guarded = [this](auto body, const char* content_type = "application/json") {
      return [this, body, content_type](Request&& request, const Captures&, Reply reply) {
        const auto header = request[http::field::authorization];
        if (!admin_authorized(std::string_view(header.data(), header.size()), options.admin_token)) {
          Response refused = error_response(
              401, "the debug endpoints need the admin token: 'Authorization: Bearer <token>', or HTTP Basic "
                   "credentials with the token as the password");
          refused.set(http::field::www_authenticate, kAdminChallenge);
          return answer(reply, metrics, "", std::move(refused));
        }
        Response ok = make_response(200, body(), content_type);
        ok.set(http::field::cache_control, "no-store");
        answer(reply, metrics, "", std::move(ok));
      };
    };
    // The live report page (docs/report.md): the page polls the two routes below and /metrics.
    router.add(http::verb::get, "/v2/debug/ui", guarded([] { return debug_ui_page(); }, "text/html; charset=utf-8"));
    router.add(http::verb::get, "/v2/debug/memory", guarded([] {
      std::ostringstream tree;
      debug::dump(tree, false, debug::Format::json);
      return tree.str();
    }));
    router.add(http::verb::post, "/v2/debug/snapshot", guarded([this] {
      debug::Snapshot taken = debug::snapshot();
      const std::string summary = fmt::format(R"({{"arrays":{},"bytes":{},"orphans":{}}})", taken.arrays.size(),
                                              taken.bytes(), taken.orphan_count());
      std::lock_guard lock(snapshot_mutex);
      snapshot = std::move(taken);
      return summary;
    }));
    router.add(http::verb::get, "/v2/debug/diff", guarded([this] {
      std::lock_guard lock(snapshot_mutex);
      if (!snapshot) snapshot = debug::Snapshot{};  // no snapshot yet: everything grew since nothing
      return debug::diff(*snapshot, debug::snapshot()).to_json();
    }));
  }

  void infer(Request&& request, const std::string& name, Reply reply) {
    const auto arrived = std::chrono::steady_clock::now();
    auto it = models.find(name);
    if (it == models.end()) return answer(reply, metrics, "", error_response(404, fmt::format("unknown model '{}'", name)));
    Served& served = it->second;
    if (closing) return answer(reply, metrics, name, error_response(503, "the server is shutting down"));
    Job job;
    try {
      std::optional<std::size_t> json_length;  // Triton's binary tensor extension (kserve_codec.hpp)
      const auto header = request.find("Inference-Header-Content-Length");
      if (header != request.end())
        json_length = parse_json_length(std::string_view(header->value().data(), header->value().size()));
      job.request = decode_infer_request(request.body(), served.spec, json_length);
    } catch (const HttpError& e) {
      return answer(reply, metrics, name, error_response(e.status(), e.what()));
    }
    job.arrived = arrived;
    Metrics* m = &metrics;
    job.done = [reply, m, name](unsigned status, EncodedResponse encoded) mutable {
      const std::size_t json_length = encoded.json_length;
      Response response = make_response(status, std::move(encoded.body),
                                         json_length ? "application/octet-stream" : "application/json");
      if (json_length) response.set("Inference-Header-Content-Length", std::to_string(json_length));
      answer(reply, *m, name, std::move(response));
    };
    if (!served.batcher->submit(std::move(job))) {
      served.metrics->rejected.fetch_add(1);
      answer(reply, metrics, name,
             error_response(503, closing ? "the server is shutting down"
                                         : fmt::format("the queue of model '{}' is full ({} requests)", name,
                                                       options.max_queue)));
    }
  }

  void handle(Request&& request, Reply reply) {
    const Router::Match m = router.match(request.method(), std::string_view(request.target().data(), request.target().size()));
    if (m.handler) return (*m.handler)(std::move(request), m.captures, std::move(reply));
    if (m.status == 405) {
      Response r = error_response(405, fmt::format("method {} is not allowed on {} (allowed: {})",
                                                   std::string(request.method_string()), std::string(request.target()), m.allow));
      r.set(http::field::allow, m.allow);
      return answer(reply, metrics, "", std::move(r));
    }
    answer(reply, metrics, "", error_response(404, fmt::format("no endpoint {}", std::string(request.target()))));
  }

  bool stop(std::chrono::milliseconds timeout) {
    if (stopped) return true;
    stopped = true;
    ready = false;  // Note [Shutdown order]
    closing = true;
    if (!http) return true;
    http->stop_accepting();
    for (auto& [name, s] : models) s.batcher->close();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    bool drained = false;
    for (;;) {
      std::int64_t pending = 0;
      for (auto& [name, s] : models) pending += s.batcher->pending();
      drained = pending == 0 && http->in_flight() == 0;
      if (drained || std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (!drained) answer_queued_with_503();
    http->stop();
    for (auto& [name, s] : models) s.batcher.reset();  // joins the workers: each finishes the batch it runs
    return drained;
  }

  // Past the shutdown's deadline: the queued requests get 503 (Note
  // [Shutdown order]); the I/O threads get up to kGrace to write those.
  void answer_queued_with_503() {
    constexpr auto kGrace = std::chrono::milliseconds(100);
    std::size_t answered = 0;
    for (auto& [name, s] : models)
      answered += s.batcher->abandon("the server is shutting down and its exit timeout passed before this request ran");
    const auto until = std::chrono::steady_clock::now() + kGrace;
    while (answered > 0 && http->in_flight() > 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
};

int compute_threads_for(const ServerOptions& options, int models, int cores) {
  const int inference_threads = std::max(1, options.workers) * std::max(1, models);
  return std::max(1, (cores - std::max(1, options.io_threads)) / inference_threads);
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->routes();
  if (!impl_->options.admin_token.empty()) impl_->admin_routes();
}

Server::~Server() { impl_->stop(std::chrono::milliseconds(0)); }

void Server::add_model(const std::string& name, Model& model, std::int64_t inputs, std::int64_t outputs) {
  if (inputs < 1 || outputs < 1) throw InvalidArgument(fmt::format("Server::add_model('{}'): sizes must be positive", name));
  const TensorSpec spec = TensorSpec::flat(inputs, outputs);
  add_model(name, model, spec.inputs, spec.outputs);
}

void Server::add_model(const std::string& name, Model& model, std::vector<TensorInfo> inputs,
                       std::vector<TensorInfo> outputs) {
  if (impl_->http) throw InvalidArgument(fmt::format("Server::add_model('{}'): the server has started", name));
  if (impl_->models.count(name)) throw InvalidArgument(fmt::format("Server::add_model: model '{}' twice", name));
  check_tensors(name, inputs, "input");
  check_tensors(name, outputs, "output");
  const TensorSpec spec{std::move(inputs), std::move(outputs)};
  ModelMetrics& m = impl_->metrics.add_model(name, impl_->options.max_batch_size, model.manager().device());
  impl_->models.emplace(name, Impl::Served{&model, spec, &m, nullptr});
}

unsigned short Server::start() {
  Impl& i = *impl_;
  const ServerOptions& o = i.options;
  for (auto& [name, s] : i.models) {
    BatchOptions b;
    b.max_batch_size = std::max<std::int64_t>(1, o.max_batch_size);
    b.max_queue_delay = std::chrono::microseconds(o.max_queue_delay_us);
    b.max_queue = o.max_queue;
    b.workers = o.workers;
    b.workspace = o.workspace;
    b.leak_translator = o.leak_translator;
    b.precision = o.precision;
    s.batcher = std::make_unique<Batcher>(name, *s.model, s.spec, b, *s.metrics);
  }
  HttpOptions h;
  h.host = o.host;
  h.port = o.port;
  h.io_threads = o.io_threads;
  h.poll = std::chrono::microseconds(std::max<std::int64_t>(0, o.io_poll_us));
  h.max_body_bytes = o.max_body_bytes;
  h.max_header_bytes = o.max_header_bytes;
  h.read_timeout = o.read_timeout;
  i.http = std::make_unique<HttpServer>(
      h, [&i](Request&& r, Reply reply) { i.handle(std::move(r), std::move(reply)); },
      [&i](unsigned status, const std::string& message) {
        i.metrics.record_request("", status);
        return error_response(status, message);
      });
  const unsigned short port = i.http->start();
  i.ready = true;
  return port;
}

unsigned short Server::port() const noexcept { return impl_->http ? impl_->http->port() : 0; }

bool Server::shutdown(std::chrono::milliseconds timeout) { return impl_->stop(timeout); }

std::string Server::metrics() const { return impl_->metrics.render(); }

}  // namespace ndgc::serving
