// The Beast connections of HttpServer (http_server.hpp): accept, read with
// limits and one deadline, hand to the Handler, write the Reply, repeat; and
// the sweeper that enforces the deadlines.
#include "serving/http_server.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace ndgc::serving {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace detail {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket&& socket, const HttpOptions& options, const Handler& handler, const LimitHandler& on_limit,
             std::atomic<std::int64_t>& in_flight)
      : socket_(std::move(socket)), options_(options), handler_(handler), on_limit_(on_limit), in_flight_(in_flight) {
    buffer_.reserve(kReadChunk);
  }

  void start() {
    asio::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->read(); });
  }

  // For the sweeper, from any thread (Note [Deadlines without a timer per
  // connection]): whether the deadline has passed, and closing once it has,
  // checked again on the connection's strand, where the deadline changes.
  bool late(Clock::time_point now) const noexcept {
    const std::int64_t d = deadline_.load(std::memory_order_relaxed);
    return d != 0 && d <= now.time_since_epoch().count();
  }
  void expire(Clock::time_point now) {
    asio::post(socket_.get_executor(), [self = shared_from_this(), now] {
      if (self->late(now)) self->close();
    });
  }

  // From HttpServer::stop, once no thread runs the connection's handlers.
  void abort() {
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  void set_deadline(std::chrono::milliseconds from_now) {
    deadline_.store((Clock::now() + from_now).time_since_epoch().count(), std::memory_order_relaxed);
  }
  void clear_deadline() { deadline_.store(0, std::memory_order_relaxed); }

  void read() {
    parser_.emplace();
    parser_->body_limit(options_.max_body_bytes);
    parser_->header_limit(options_.max_header_bytes);
    set_deadline(options_.read_timeout);  // Note [One deadline per request]
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor ||
        ec == asio::error::connection_reset || ec == asio::error::eof)
      return close();
    if (ec == http::error::body_limit) return refuse(413, "the body is over the limit of " + std::to_string(options_.max_body_bytes) + " bytes");
    if (ec == http::error::header_limit) return refuse(431, "the headers are over the limit of " + std::to_string(options_.max_header_bytes) + " bytes");
    if (ec) return refuse(400, "malformed HTTP request: " + ec.message());
    clear_deadline();  // computing: the queue's limits apply, not the read deadline
    Request request = parser_->release();
    keep_alive_ = request.keep_alive();
    version_ = request.version();
    in_flight_.fetch_add(1);
    counted_ = true;
    // Note [A reply is called once]: a handler that replies and then throws
    // (or calls its Reply twice) must not start a second write on the
    // socket, nor answer the connection's next request with a stale
    // response. Requests on a connection are sequential, so each one's Reply
    // claims its sequence number from the last one answered; any later call
    // finds it claimed and does nothing.
    const std::uint64_t sequence = ++requests_;
    Reply reply = [self = shared_from_this(), sequence](Response&& response) {
      std::uint64_t previous = sequence - 1;
      if (!self->answered_.compare_exchange_strong(previous, sequence, std::memory_order_acq_rel)) return;
      auto owned = std::make_shared<Response>(std::move(response));
      asio::post(self->socket_.get_executor(), [self, owned] { self->write(owned); });
    };
    // A handler that throws answers 500 rather than ending the process
    // (an exception out of io_context::run would terminate it).
    try {
      handler_(std::move(request), reply);
    } catch (const std::exception& e) {
      reply(on_limit_(500, std::string("internal error: ") + e.what()));
    }
  }

  void refuse(unsigned status, const std::string& message) {
    keep_alive_ = false;
    linger_ = true;
    version_ = 11;
    write(std::make_shared<Response>(on_limit_(status, message)));
  }

  void write(std::shared_ptr<Response> response) {
    response->version(version_);
    response->keep_alive(keep_alive_);
    response->prepare_payload();
    set_deadline(options_.read_timeout);
    http::async_write(socket_, *response, [self = shared_from_this(), response](beast::error_code ec, std::size_t) {
      if (self->counted_) self->in_flight_.fetch_sub(1);
      self->counted_ = false;
      if (ec) return self->close();
      if (self->linger_) return self->linger();
      if (!self->keep_alive_) return self->close();
      self->read();
    });
  }

  // Note [Lingering close]
  // A request refused before its body was read (413) leaves the body in the
  // socket; closing with unread bytes makes the kernel send a reset, which
  // can reach the client before it reads our answer. So stop sending, read
  // and drop what the client still sends, for at most a second, then close
  // (nginx's lingering_close).
  void linger() {
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    set_deadline(std::chrono::seconds(1));
    drain();
  }

  void drain() {
    socket_.async_read_some(asio::buffer(scratch_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->close();
      self->drain();
    });
  }

  void close() {
    clear_deadline();
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    socket_.close(ignored);
  }

  // Note [Read chunks]
  // Beast reads into what the buffer has free, at least 512 bytes, and the
  // parser empties the buffer as it goes, so a buffer that starts empty
  // stays at 512 bytes: a 784-float JSON row (4.7 KB) took 10 recv calls,
  // each an extra round through the event loop. 8 KiB reads such a row, or
  // its binary form, in one.
  static constexpr std::size_t kReadChunk = 8 << 10;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const HttpOptions& options_;
  const Handler& handler_;
  const LimitHandler& on_limit_;
  std::atomic<std::int64_t>& in_flight_;
  std::atomic<Clock::rep> deadline_{0};  // Clock's ticks since its epoch; 0: none
  bool counted_ = false;
  std::uint64_t requests_ = 0;                // requests handed to the handler (on the strand)
  std::atomic<std::uint64_t> answered_{0};    // the last of them whose Reply was called (any thread)
  bool linger_ = false;
  std::array<char, 4096> scratch_;
  bool keep_alive_ = true;
  unsigned version_ = 11;
};

}  // namespace detail

HttpServer::HttpServer(HttpOptions options, Handler handler, LimitHandler on_limit)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      on_limit_(std::move(on_limit)),
      io_(std::max(1, options_.io_threads)),
      acceptor_(asio::make_strand(io_)),
      sweeper_(io_) {}

HttpServer::~HttpServer() { stop(); }

unsigned short HttpServer::start() {
  const tcp::endpoint endpoint(asio::ip::make_address(options_.host), options_.port);
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  acceptor_.bind(endpoint);
  acceptor_.listen(asio::socket_base::max_listen_connections);
  port_ = acceptor_.local_endpoint().port();
  work_.emplace(io_.get_executor());
  accepting_ = true;
  accept();
  sweep();
  for (int i = 0; i < std::max(1, options_.io_threads); ++i) threads_.emplace_back([this] { run_io(); });
  return port_;
}

// Note [Polling before sleeping]
// An I/O thread that finds nothing to do sleeps in epoll_wait, and the next
// request wakes it: on the development VM that sleep and wake cost about a
// quarter of a request's 60-80 µs at concurrency 1 (perf: the kernel's
// interrupt enabling under epoll_wait). A thread that has just finished its
// handlers is likely to get the next request within microseconds (a
// keep-alive client answering, a worker's reply), so it first polls the
// reactor without blocking for `options_.poll`, and sleeps only if nothing
// came. An idle server sleeps as before: the window opens only after work.
// Figures: perf/RESULTS.md, "Seventh pass".
void HttpServer::run_io() {
  if (options_.poll.count() <= 0) {
    io_.run();
    return;
  }
  while (!io_.stopped()) {
    if (io_.poll() > 0) continue;
    const Clock::time_point until = Clock::now() + options_.poll;
    bool ran = false;
    while (!ran && !io_.stopped() && Clock::now() < until) ran = io_.poll_one() > 0;
    if (!ran) io_.run_one();  // sleeps; returns 0 once stopped
  }
}

void HttpServer::accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
    if (!acceptor_.is_open()) {  // closed by stop_accepting: a socket accepted just now closes with `socket`
      accepting_ = false;
      accepting_.notify_all();
      return;
    }
    if (!ec) {
      auto connection =
          std::make_shared<detail::Connection>(std::move(socket), options_, handler_, on_limit_, in_flight_);
      {
        std::lock_guard lock(connections_mutex_);
        std::erase_if(connections_, [](const auto& c) { return c.expired(); });
        connections_.emplace_back(connection);
      }
      connection->start();
    }
    accept();
  });
}

void HttpServer::sweep() {
  using std::chrono::milliseconds;
  sweeper_.expires_after(std::clamp(options_.read_timeout / 4, milliseconds(5), milliseconds(1000)));
  sweeper_.async_wait([this](beast::error_code ec) {
    if (ec) return;  // stopping
    const Clock::time_point now = Clock::now();
    {
      std::lock_guard lock(connections_mutex_);
      for (const auto& c : connections_)
        if (auto connection = c.lock(); connection && connection->late(now)) connection->expire(now);
    }
    sweep();
  });
}

void HttpServer::stop_accepting() {
  asio::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
}

// Note [No connection outlives stop]
// stop_accepting() only posts the listening socket's close. Were the I/O
// threads stopped before it ran, the socket would stay open until
// ~HttpServer, and a client that connected meanwhile would wait, connected
// and unanswered, with its request in the kernel's queue; likewise a socket
// accepted but whose handler had not run would stay open in the
// io_context's queue. So stop() first waits for the accept loop to end: its
// last handler runs after the close, and closes what it was handed. The
// kernel resets what was still in the listening socket's queue; every
// connection accepted before is in connections_ and closed below.
void HttpServer::stop() {
  if (!threads_.empty()) {
    stop_accepting();
    accepting_.wait(true);
  }
  work_.reset();
  io_.stop();
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  // No thread runs a handler now: the streams may be closed from here.
  std::lock_guard lock(connections_mutex_);
  for (const auto& c : connections_)
    if (auto connection = c.lock()) connection->abort();
  connections_.clear();
}

}  // namespace ndgc::serving
