// HttpServer (src/serving/http_server.hpp) on its own: Note [A reply is
// called once]. A handler that replies and then throws, or replies twice,
// answers its request once, and the connection's next request gets its own
// answer, not a stale second one.
#include <doctest/doctest.h>

#include <chrono>
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

}  // namespace ndgc::serving
