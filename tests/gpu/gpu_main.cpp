// The GPU suite's main: runs doctest when a CUDA device is usable, otherwise
// prints one line saying why and exits 0, so CI without a GPU stays green.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include <ndgc/ndgc.hpp>

#include "support/gpu_probe.hpp"

int main(int argc, char** argv) {
  if (ndgc::gpu_count() == 0) {
    std::printf("test_gpu: skipped: no usable CUDA device (%s)\n", ndgc::support::gpu_unavailable_reason().c_str());
    return 0;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
