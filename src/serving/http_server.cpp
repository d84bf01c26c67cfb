// The Beast connections of HttpServer (http_server.hpp): accept, read with
// limits and one deadline, hand to the Handler, write the Reply, repeat.
#include "serving/http_server.hpp"

#include <array>
#include <optional>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace ndgc::serving {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, const HttpOptions& options, const Handler& handler, const LimitHandler& on_limit,
          std::atomic<std::int64_t>& in_flight)
      : stream_(std::move(socket)), options_(options), handler_(handler), on_limit_(on_limit), in_flight_(in_flight) {}

  void start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(); });
  }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(options_.max_body_bytes);
    parser_->header_limit(options_.max_header_bytes);
    stream_.expires_after(options_.read_timeout);  // Note [One deadline per request]
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof)
      return close();
    if (ec == http::error::body_limit) return refuse(413, "the body is over the limit of " + std::to_string(options_.max_body_bytes) + " bytes");
    if (ec == http::error::header_limit) return refuse(431, "the headers are over the limit of " + std::to_string(options_.max_header_bytes) + " bytes");
    if (ec) return refuse(400, "malformed HTTP request: " + ec.message());
    stream_.expires_never();  // computing: the queue's limits apply, not the read deadline
    Request request = parser_->release();
    keep_alive_ = request.keep_alive();
    version_ = request.version();
    in_flight_.fetch_add(1);
    counted_ = true;
    Reply reply = [self = shared_from_this()](Response&& response) {
      auto owned = std::make_shared<Response>(std::move(response));
      asio::post(self->stream_.get_executor(), [self, owned] { self->write(owned); });
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
    stream_.expires_after(options_.read_timeout);
    http::async_write(stream_, *response, [self = shared_from_this(), response](beast::error_code ec, std::size_t) {
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
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(1));
    drain();
  }

  void drain() {
    stream_.async_read_some(asio::buffer(scratch_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->stream_.close();
      self->drain();
    });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

  friend class ndgc::serving::HttpServer;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const HttpOptions& options_;
  const Handler& handler_;
  const LimitHandler& on_limit_;
  std::atomic<std::int64_t>& in_flight_;
  bool counted_ = false;
  bool linger_ = false;
  std::array<char, 4096> scratch_;
  bool keep_alive_ = true;
  unsigned version_ = 11;
};

}  // namespace

HttpServer::HttpServer(HttpOptions options, Handler handler, LimitHandler on_limit)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      on_limit_(std::move(on_limit)),
      io_(std::max(1, options_.io_threads)),
      acceptor_(asio::make_strand(io_)) {}

HttpServer::~HttpServer() { stop(); }

unsigned short HttpServer::start() {
  const tcp::endpoint endpoint(asio::ip::make_address(options_.host), options_.port);
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  acceptor_.bind(endpoint);
  acceptor_.listen(asio::socket_base::max_listen_connections);
  port_ = acceptor_.local_endpoint().port();
  work_.emplace(io_.get_executor());
  accept();
  for (int i = 0; i < std::max(1, options_.io_threads); ++i) threads_.emplace_back([this] { io_.run(); });
  return port_;
}

void HttpServer::accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
    if (!acceptor_.is_open()) return;
    if (!ec) {
      auto session = std::make_shared<Session>(std::move(socket), options_, handler_, on_limit_, in_flight_);
      {
        std::lock_guard lock(connections_mutex_);
        std::erase_if(connections_, [](const auto& c) { return c.expired(); });
        connections_.emplace_back(std::shared_ptr<beast::tcp_stream>(session, &session->stream_));
      }
      session->start();
    }
    accept();
  });
}

void HttpServer::stop_accepting() {
  asio::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
}

void HttpServer::stop() {
  work_.reset();
  io_.stop();
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  // No thread runs a handler now: the streams may be closed from here.
  std::lock_guard lock(connections_mutex_);
  for (const auto& c : connections_)
    if (auto stream = c.lock()) {
      beast::error_code ignored;
      stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
      stream->socket().close(ignored);
    }
  connections_.clear();
}

}  // namespace ndgc::serving
