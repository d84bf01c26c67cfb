// HttpServer (src/serving/http_server.hpp) on its own: Note [A reply is
// called once]. A handler that replies and then throws, or replies twice,
// answers its request once, and the connection's next request gets its own
// answer, not a stale second one. And Note [No connection outlives stop]: a
// client that connected before stop() sees its connection end.
#include <doctest/doctest.h>

#include <poll.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>

#include "serving/http_client.hpp"
#include "serving/http_server.hpp"

namespace ndgc::serving {
namespace {

Response text(unsigned status, std::string body) {
  Response r{static_cast<boost::beast::http::status>(status), 11};
  r.body() = std::move(body);
  return r;
}

void handle(Request&& request, Reply reply) {
  const std::string target(request.target());
  if (target == "/reply-then-throw") {
    reply(text(200, "first"));
    throw std::runtime_error("after the reply");
  }
  if (target == "/reply-twice") {
    reply(text(200, "once"));
    reply(text(200, "twice"));
    return;
  }
  reply(text(200, "answer to " + target));
}

}  // namespace

TEST_CASE("HttpServer: a Reply answers once; a second call or a throw after it sends nothing more") {
  HttpOptions o;
  o.port = 0;
  o.io_threads = 2;
  HttpServer server(o, handle, [](unsigned status, const std::string& message) { return text(status, message); });
  const unsigned short port = server.start();
  test::Client c(port);  // one keep-alive connection for every request
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    CHECK(c.get("/reply-then-throw").body() == "first");
    CHECK(c.get("/next").body() == "answer to /next");  // not the 500 of the throw
    CHECK(c.get("/reply-twice").body() == "once");
    CHECK(c.get("/after").body() == "answer to /after");  // not "twice"
  }
  // The last write's completion handler counts it done, maybe just after the client read it.
  for (int spin = 0; spin < 1000 && server.in_flight() != 0; ++spin) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(server.in_flight() == 0);
  server.stop();
}

TEST_CASE("HttpServer: stop() ends a connection made while every I/O thread was busy; its client is not left waiting") {
  // One I/O thread, held in a handler: a client that connects meanwhile is
  // in the kernel's accept queue, and stop() is called before the thread
  // could accept it or close the listening socket.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> entered{false};
  HttpOptions o;
  o.port = 0;
  o.io_threads = 1;
  HttpServer server(
      o,
      [&](Request&&, Reply reply) {
        entered = true;
        released.wait();
        reply(text(200, "released"));
      },
      [](unsigned status, const std::string& message) { return text(status, message); });
  const unsigned short port = server.start();
  test::Client holder(port);
  auto held = std::async(std::launch::async, [&] {
    try {
      return holder.get("/hold").result_int();
    } catch (const std::exception&) {
      return 0u;  // stopped before the answer was written: the connection closed
    }
  });
  for (int spin = 0; spin < 5000 && !entered; ++spin) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(entered);
  test::Client late(port);  // the kernel completes the handshake; no thread accepts it yet
  boost::beast::http::request<boost::beast::http::string_body> req{boost::beast::http::verb::get, "/late", 11};
  req.set(boost::beast::http::field::host, "127.0.0.1");
  boost::beast::http::write(late.stream(), req);
  auto stopping = std::async(std::launch::async, [&] { server.stop(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // stop() has begun
  release.set_value();
  stopping.get();
  const unsigned held_status = held.get();
  CHECK((held_status == 200 || held_status == 0));
  // The late client's connection must end (closed or reset), not stay open
  // with no one to answer it: wait up to 5 s for the socket to be readable.
  pollfd p{late.stream().socket().native_handle(), POLLIN, 0};
  REQUIRE_MESSAGE(::poll(&p, 1, 5000) == 1, "the connection made before stop() is still open and unanswered after it");
  boost::beast::error_code ec;
  char byte;
  late.stream().socket().read_some(boost::asio::buffer(&byte, 1), ec);
  CHECK((ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset));
}

}  // namespace ndgc::serving
