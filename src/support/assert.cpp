// The failure path of NDGC_ASSERT (support/assert.hpp).
#include "support/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace ndgc::support {

void assertion_failed(const char* file, int line, const char* condition, const char* message) noexcept {
  std::fprintf(stderr, "%s:%d: ndgc invariant broken: %s (%s)\n", file, line, message, condition);
  std::fflush(stderr);
  std::abort();
}

}  // namespace ndgc::support
