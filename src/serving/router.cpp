// Router (router.hpp): segment-by-segment matching of request targets.
#include "serving/router.hpp"

namespace ndgc::serving {
namespace {

std::vector<std::string> split(std::string_view path) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < path.size()) {
    if (path[at] == '/') {
      ++at;
      continue;
    }
    const std::size_t end = path.find('/', at);
    out.emplace_back(path.substr(at, end == std::string_view::npos ? path.size() - at : end - at));
    at = end == std::string_view::npos ? path.size() : end;
  }
  return out;
}

bool matches(const std::vector<std::string>& pattern, const std::vector<std::string>& path, Captures* captures) {
  if (pattern.size() != path.size()) return false;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const std::string& p = pattern[i];
    if (p.size() > 2 && p.front() == '{' && p.back() == '}') {
      if (captures) (*captures)[p.substr(1, p.size() - 2)] = path[i];
    } else if (p != path[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

void Router::add(boost::beast::http::verb method, std::string pattern, RouteHandler handler) {
  routes_.push_back({method, split(pattern), std::move(handler)});
}

Router::Match Router::match(boost::beast::http::verb method, std::string_view target) const {
  const std::string_view path = target.substr(0, target.find('?'));
  const std::vector<std::string> segments = split(path);
  Match m;
  m.status = 404;
  for (const Route& r : routes_) {
    if (!matches(r.segments, segments, nullptr)) continue;
    if (r.method == method) {
      m = Match{};
      matches(r.segments, segments, &m.captures);
      m.handler = &r.handler;
      return m;
    }
    m.status = 405;
    const std::string name(boost::beast::http::to_string(r.method));
    if (m.allow.find(name) == std::string::npos) m.allow += (m.allow.empty() ? "" : ", ") + name;
  }
  return m;
}

}  // namespace ndgc::serving
