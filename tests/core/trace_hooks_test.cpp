// The trace detector's hooks, in a program that does not link ndgc::trace.
#include <doctest/doctest.h>

#include <string>

#include "core/autoclose.hpp"
#include "test_util.hpp"

using namespace ndgc;

TEST_CASE("gc::enable(Detector::trace) without ndgc::trace linked throws InvalidArgument") {
  REQUIRE(detail::trace_hooks() == nullptr);  // this binary does not link it
  bool was_on = gc::enabled();
  try {
    gc::enable(gc::Detector::trace);
    FAIL("no exception");
  } catch (const InvalidArgument& e) {
    CHECK(std::string(e.what()).find("ndgc::trace") != std::string::npos);
  }
  CHECK(gc::detector() == gc::Detector::refcount);
  CHECK(gc::enabled() == was_on);
  CHECK_FALSE(detail::tracing());
}

TEST_CASE("new NDArray without the trace detector uses the ordinary heap") {
  NDManager m = NDManager::new_base_manager("new-handle");
  auto* h = new NDArray(m.ones({3}));
  CHECK(h->handle_count() == 1);
  NDArray copy = *h;
  delete h;
  CHECK(copy.handle_count() == 1);
  CHECK(copy.sum().item<float>() == 3.0f);
  alignas(NDArray) unsigned char buffer[sizeof(NDArray)];
  auto* placed = new (buffer) NDArray(copy);  // the placement form still compiles
  CHECK(copy.handle_count() == 2);
  placed->~NDArray();
  CHECK(copy.handle_count() == 1);
}
