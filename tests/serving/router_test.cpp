// Router (src/serving/router.cpp): captures, 404 and 405 with Allow.
#include <doctest/doctest.h>

#include "serving/router.hpp"

namespace ndgc::serving {

TEST_CASE("routes match by segments, capture names, and tell 404 from 405") {
  using boost::beast::http::verb;
  Router r;
  r.add(verb::get, "/v2/models/{name}", [](Request&&, const Captures&, Reply) {});
  r.add(verb::post, "/v2/models/{name}/infer", [](Request&&, const Captures&, Reply) {});
  const Router::Match m = r.match(verb::post, "/v2/models/fashion/infer?x=1");
  REQUIRE(m.handler);
  CHECK(m.captures.at("name") == "fashion");
  const Router::Match wrong = r.match(verb::get, "/v2/models/fashion/infer");
  CHECK(!wrong.handler);
  CHECK(wrong.status == 405);
  CHECK(wrong.allow == "POST");
  CHECK(r.match(verb::get, "/v2/models/a/b/c").status == 404);
  CHECK(r.match(verb::get, "/").status == 404);
}

}  // namespace ndgc::serving
