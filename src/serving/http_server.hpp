// The HTTP/1.1 server of ndgc::serving: Boost.Beast connections on
// --io-threads Asio threads, keep-alive, limits and timeouts. It knows
// nothing of models: each request goes to a Handler, which answers through
// a Reply that any thread may call (the inference workers do).
//
// Thread-safety: a connection's operations run on its own strand; a Reply
// posts the write there, so a worker never touches the socket. A
// connection reads its next request only after its response is written
// (HTTP/1.1 without pipelining), so at most one request per connection is in
// flight and no response can reach another request's client.
//
// Note [One deadline per request]
// A request's read (headers and body) has one deadline, `read_timeout`, set
// when the read starts and not extended by bytes arriving: a client that
// trickles a byte a second is cut off like a silent one. Between requests
// the same deadline is the keep-alive idle timeout. While the request is
// computed there is no deadline (the queue's own limits apply); the write
// of the response has `read_timeout` again.
//
// Note [Deadlines without a timer per connection]
// A deadline is a time stored in the connection, and one sweeper timer per
// server checks them every `read_timeout / 4` (5 ms to 1 s): a connection
// past its deadline is closed on its strand, so it is cut off between 1 and
// 1.25 times `read_timeout` after the read began. Beast's tcp_stream instead
// arms an Asio timer around every socket operation, and each arming is a
// timerfd_settime system call: under strace, 10 per request of one 784-float
// row, beside 9 reads and 1 send (perf/RESULTS.md, "ndgc-serve under load").
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace ndgc::serving {

namespace detail {
class Connection;  // http_server.cpp
}

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;
// Answers one request, from any thread. Only its first call answers; later
// calls do nothing (Note [A reply is called once] in http_server.cpp).
using Reply = std::function<void(Response&&)>;
using Handler = std::function<void(Request&&, Reply)>;
// Called instead of the Handler when a request breaks a limit: 413 for a
// body over max_body_bytes, 431 for headers over max_header_bytes, 400 for
// anything Beast cannot parse; the connection closes after the answer. Also
// 500 when the Handler throws (the connection stays open).
using LimitHandler = std::function<Response(unsigned status, const std::string& message)>;

struct HttpOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 8080;  // 0: any free port
  int io_threads = 1;
  std::uint64_t max_body_bytes = 64ull << 20;
  std::uint32_t max_header_bytes = 16u << 10;
  std::chrono::milliseconds read_timeout{30000};  // Notes [One deadline per request], [Deadlines without a timer ...]
  // How long an I/O thread polls for more work before it sleeps; 0: never
  // polls (Note [Polling before sleeping]).
  std::chrono::microseconds poll{25};
};

class HttpServer {
 public:
  HttpServer(HttpOptions options, Handler handler, LimitHandler on_limit);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the threads; returns the port. Throws
  // boost::system::system_error when the address cannot be bound.
  unsigned short start();
  unsigned short port() const noexcept { return port_; }
  // Closes the listening socket: no new connections; open ones go on.
  void stop_accepting();
  // Closes the listening socket and waits for the accept loop to end, then
  // stops the threads and closes every open connection (a client waiting
  // for an answer sees the connection end rather than waiting forever; Note
  // [No connection outlives stop] in http_server.cpp).
  void stop();
  // Requests handed to the Handler whose responses are not yet written.
  std::int64_t in_flight() const noexcept { return in_flight_.load(); }

 private:
  // One I/O thread's loop: io_.run(), or polling first (Note [Polling before sleeping]).
  void run_io();
  void accept();
  // Closes the connections past their deadline, then waits a tick and again.
  void sweep();
  HttpOptions options_;
  Handler handler_;
  LimitHandler on_limit_;
  boost::asio::io_context io_;
  // Keeps io_.run() going while every connection waits for a worker's Reply
  // and nothing else is pending (after stop_accepting, it would return).
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer sweeper_;  // Note [Deadlines without a timer per connection]
  std::vector<std::thread> threads_;
  unsigned short port_ = 0;
  std::atomic<std::int64_t> in_flight_{0};
  std::atomic<bool> accepting_{false};  // an accept is pending or its handler runs (start() to the loop's end)
  std::mutex connections_mutex_;
  std::vector<std::weak_ptr<detail::Connection>> connections_;  // pruned as they end
};

}  // namespace ndgc::serving
