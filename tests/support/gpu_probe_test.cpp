// Tests src/support/gpu_probe.cpp: gpu_count() and the device check in a
// program that does not link ndgc::cuda (every test binary but test_gpu), and
// the three messages a probe can make it give.
#include <doctest/doctest.h>

#include <string>

#include <ndgc/ndgc.hpp>

#include "support/gpu_probe.hpp"

using namespace ndgc;

namespace {

// A probe that reports `g_count` devices, as gpu/ would.
int g_count = 0;
int fake_count() noexcept { return g_count; }
std::string fake_why() noexcept { return "cudaGetDeviceCount: no CUDA-capable device is detected"; }
constexpr support::GpuProbe kFakeProbe{fake_count, fake_why};

// Installs the fake probe for one test case and removes it again.
struct FakeProbe {
  explicit FakeProbe(int count) {
    g_count = count;
    support::register_gpu_probe(&kFakeProbe);
  }
  ~FakeProbe() { support::register_gpu_probe(nullptr); }
};

std::string message_of(Device d) {
  try {
    support::check_device(d, "probe-test");
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("without the CUDA engine there are no GPUs and gpu(i) says the engine is not linked") {
  CHECK_FALSE(support::gpu_engine_linked());
  CHECK(gpu_count() == 0);
  CHECK_NOTHROW(support::check_device(Device::cpu(), "probe-test"));
  const std::string m = message_of(Device::gpu(0));
  CHECK(m.find("probe-test") != std::string::npos);
  CHECK(m.find("gpu(0)") != std::string::npos);
  CHECK(m.find("not linked") != std::string::npos);
  CHECK(m.find("ndgc::cuda") != std::string::npos);
  CHECK_THROWS_WITH_AS((void)NDManager::new_base_manager("g", Device::gpu(0)), doctest::Contains("not linked"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(memory::stats(Device::gpu(1)), doctest::Contains("gpu(1)"), InvalidArgument);
}

TEST_CASE("a linked engine with no usable device says why") {
  FakeProbe probe(0);
  CHECK(support::gpu_engine_linked());
  CHECK(gpu_count() == 0);
  const std::string m = message_of(Device::gpu(0));
  CHECK(m.find("gpu(0)") != std::string::npos);
  CHECK(m.find("no usable GPU") != std::string::npos);
  CHECK(m.find("cudaGetDeviceCount") != std::string::npos);
  CHECK(m.find("not linked") == std::string::npos);
}

TEST_CASE("an index past gpu_count() is out of range, naming the devices there are") {
  FakeProbe probe(2);
  CHECK(gpu_count() == 2);
  CHECK_NOTHROW(support::check_device(Device::gpu(1), "probe-test"));
  const std::string m = message_of(Device::gpu(2));
  CHECK(m.find("gpu(2)") != std::string::npos);
  CHECK(m.find("out of range") != std::string::npos);
  CHECK(m.find("2 usable GPUs") != std::string::npos);
  CHECK(message_of(Device::gpu(-1)).find("out of range") != std::string::npos);
  CHECK(message_of(Device{DeviceType::cpu, 1}).find("not a valid device") != std::string::npos);
}

TEST_CASE("ndgc::check_device: the public check, its message starting with the caller's words") {
  CHECK_NOTHROW(check_device(Device::cpu(), "tool --device cpu"));
  CHECK_THROWS_WITH_AS(check_device(Device::gpu(0), "tool --device gpu:0"),
                       doctest::Contains("tool --device gpu:0: gpu(0) is not available: the CUDA engine is not linked"),
                       InvalidArgument);
  FakeProbe probe(0);
  CHECK_THROWS_WITH_AS(check_device(Device::gpu(0), "tool"),
                       doctest::Contains("tool: gpu(0) is not available: no usable GPU (cudaGetDeviceCount"),
                       InvalidArgument);
}
