// support/sanitizers.hpp: NDGC_ASAN and NDGC_TSAN say what the build asked
// for (NDGC_SANITIZE, passed in by tests/CMakeLists.txt), under GCC and clang.
#include <doctest/doctest.h>

#include <string_view>

#include "support/free_list.hpp"
#include "support/sanitizers.hpp"

TEST_CASE("NDGC_ASAN and NDGC_TSAN match the sanitizers the build was configured with") {
  constexpr std::string_view configured = NDGC_TEST_SANITIZE;
  CHECK(NDGC_ASAN == (configured.find("address") != std::string_view::npos));
  CHECK(NDGC_TSAN == (configured.find("thread") != std::string_view::npos));
  // The free lists step aside under either sanitizer, so that it sees every object.
  CHECK(NDGC_EXACT_OBJECTS == (NDGC_ASAN || NDGC_TSAN));
}
