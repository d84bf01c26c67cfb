// A blocking Beast HTTP/1.1 client for the serving tests: one keep-alive
// connection to 127.0.0.1:PORT.
#pragma once

#include <string>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace ndgc::serving::test {

namespace beast = boost::beast;
namespace http = beast::http;

using ClientResponse = http::response<http::string_body>;

class Client {
 public:
  explicit Client(unsigned short port) : stream_(io_) {
    stream_.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  }
  ClientResponse send(http::verb method, const std::string& target, const std::string& body = "") {
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.keep_alive(true);
    if (!body.empty() || method == http::verb::post) {
      req.set(http::field::content_type, "application/json");
      req.body() = body;
    }
    req.prepare_payload();
    http::write(stream_, req);
    ClientResponse res;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 30);
    http::read(stream_, buffer_, parser);
    return parser.release();
  }
  ClientResponse get(const std::string& target) { return send(http::verb::get, target); }
  ClientResponse post(const std::string& target, const std::string& body) { return send(http::verb::post, target, body); }
  beast::tcp_stream& stream() { return stream_; }

 private:
  boost::asio::io_context io_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
};

}  // namespace ndgc::serving::test
