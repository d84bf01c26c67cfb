// Sites: the library's own creation and close sites are relative to the
// source tree (Note [Relative sites] in CMakeLists.txt); a user's stay as the
// user's compiler gives them.
#include <doctest/doctest.h>

#include <string>

#include "test_util.hpp"

using namespace ndgc;

TEST_CASE("a site inside the library is relative to the source tree; the user's own is untouched") {
  NDManager m = NDManager::new_base_manager("sites");
  NDArray w = m.ones({2}).set_requires_gradient(true);
  // The gradient is created by the library (autograd), at its own line.
  const std::string lib = w.gradient().creation_site().file_name();
  CHECK(lib == "src/autograd/gradient_state.cpp");
  CHECK(debug::SiteInfo::from(w.gradient().creation_site()).to_string().starts_with("src/autograd/"));
  // This file is not the library's: its path is what the compiler was given.
  CHECK(std::string(w.creation_site().file_name()) == __FILE__);
}
