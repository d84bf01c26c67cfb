// ScopeExit (support/scope_exit.hpp): its function runs once when the scope
// ends, whether the scope returns or throws.
#include <doctest/doctest.h>

#include <stdexcept>

#include "support/scope_exit.hpp"

namespace ndgc {

TEST_CASE("ScopeExit runs its function once, at the end of the scope") {
  int runs = 0;
  {
    support::ScopeExit count{[&] { ++runs; }};
    CHECK(runs == 0);
  }
  CHECK(runs == 1);
}

TEST_CASE("ScopeExit runs its function when the scope ends by an exception") {
  thread_local int depth = 0;
  auto body = [] {
    ++depth;
    support::ScopeExit restore{[] { --depth; }};
    throw std::runtime_error("the body failed");
  };
  CHECK_THROWS_WITH_AS(body(), "the body failed", std::runtime_error);
  CHECK(depth == 0);
}

}  // namespace ndgc
