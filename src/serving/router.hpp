// Routes requests by method and path pattern ("/v2/models/{name}/infer") to
// handlers; a path that matches with another method is 405 (with Allow), a
// path that matches nothing is 404. Patterns are literal segments and
// {captures}; the first route that matches wins. Built before the server
// starts, then read-only: match() is thread-safe.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http/verb.hpp>

#include "serving/http_server.hpp"

namespace ndgc::serving {

using Captures = std::map<std::string, std::string, std::less<>>;
using RouteHandler = std::function<void(Request&&, const Captures&, Reply)>;

class Router {
 public:
  void add(boost::beast::http::verb method, std::string pattern, RouteHandler handler);

  struct Match {
    const RouteHandler* handler = nullptr;  // null: see status
    Captures captures;
    unsigned status = 200;  // 404 or 405 when no handler
    std::string allow;      // for 405: the methods the path takes, "GET, POST"
  };
  Match match(boost::beast::http::verb method, std::string_view target) const;

 private:
  struct Route {
    boost::beast::http::verb method;
    std::vector<std::string> segments;
    RouteHandler handler;
  };
  std::vector<Route> routes_;
};

}  // namespace ndgc::serving
