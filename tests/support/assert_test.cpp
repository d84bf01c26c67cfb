// NDGC_ASSERT (src/support/assert.hpp): in builds with assertions (the Debug
// builds of the sanitizer phases) a broken invariant aborts and says where
// and what; elsewhere the condition is not even evaluated.
#include <doctest/doctest.h>

#include <string>

#include "death.hpp"
#include "support/assert.hpp"

TEST_CASE("NDGC_ASSERT: a false condition aborts, naming the file, the invariant and the condition" *
          doctest::skip(!NDGC_ASSERTIONS_ON)) {
  const ndgc::test::Death d = ndgc::test::run_in_child([] {
    const int running = -1;
    NDGC_ASSERT(running >= 0, "a pool's running count is never negative");
  });
  CHECK(d.stopped);
  CHECK(d.stderr_text.find("assert_test.cpp") != std::string::npos);
  CHECK(d.stderr_text.find("a pool's running count is never negative") != std::string::npos);
  CHECK(d.stderr_text.find("running >= 0") != std::string::npos);
}

TEST_CASE("NDGC_ASSERT: a true condition goes on; without assertions the condition is not evaluated") {
  int evaluations = 0;
  NDGC_ASSERT(++evaluations > 0, "counts");
  CHECK(evaluations == (NDGC_ASSERTIONS_ON ? 1 : 0));
}
