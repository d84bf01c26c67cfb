// Linking ndgc::cuda registers the engine (gpu/cuda_registration.cpp): this
// program calls nothing in it, so only the registrar can make these pass.
// Runs with or without a GPU.
#include <doctest/doctest.h>

#include <string>

#include <ndgc/ndgc.hpp>

#include "support/gpu_probe.hpp"

using namespace ndgc;

TEST_CASE("linking ndgc::cuda registers the GPU probe") {
  CHECK(support::gpu_engine_linked());
  const int n = gpu_count();
  CHECK(n >= 0);
  if (n == 0) {
    // No device here: the error says so, and why, not that the engine is missing.
    const std::string why = support::gpu_unavailable_reason();
    CHECK(why.find("not linked") == std::string::npos);
    CHECK_FALSE(why.empty());
    CHECK_THROWS_WITH_AS((void)NDManager::new_base_manager("g", Device::gpu(0)), doctest::Contains("no usable GPU"),
                         InvalidArgument);
    CHECK_THROWS_WITH_AS(memory::stats(Device::gpu(0)), doctest::Contains("gpu(0)"), InvalidArgument);
  } else {
    CHECK_NOTHROW(memory::stats(Device::gpu(0)));
    CHECK_THROWS_WITH_AS((void)NDManager::new_base_manager("g", Device::gpu(n)), doctest::Contains("out of range"),
                         InvalidArgument);
  }
}
