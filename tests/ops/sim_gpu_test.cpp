// Tests tests/sim_gpu.hpp, the simulated GPU the host-side GPU tests run on:
// what it registers and takes back, that its engine computes what the CPU
// engine does and counts transfers, and that its residency check catches a
// host buffer handed to a device kernel (Note [Simulated residency]).
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "ops/engine.hpp"
#include "ops/op_support.hpp"
#include "sim_gpu.hpp"

using namespace ndgc;

TEST_CASE("SimGpu registers gpu(0) for its lifetime only") {
  CHECK(gpu_count() == 0);
  {
    test::SimGpu gpu;
    CHECK(gpu_count() == 1);
    NDManager m = NDManager::new_base_manager("sim", Device::gpu(0));
    // The table hands out the engine wrapped to count GPU writes
    // (ops/gpu_writes.hpp); its calls reach SimEngine.
    const std::uint64_t kernels = gpu.engine().kernel_calls();
    NDArray x = m.ones({256});
    CHECK(gpu.engine().kernel_calls() == kernels + 1);
    CHECK(memory::stats(Device::gpu(0)).current_bytes == 1024);
    CHECK(memory::stats(Device::gpu(0)).reserved_bytes == 2 << 20);  // one small-pool segment
    CHECK(gpu.source().used_bytes() == 2 << 20);
  }
  CHECK(gpu_count() == 0);
  CHECK_THROWS_WITH_AS(ops::engine(Device::gpu(0)), doctest::Contains("not linked"), InvalidArgument);
  CHECK_THROWS_AS(memory::stats(Device::gpu(0)), InvalidArgument);
}

TEST_CASE("SimGpu's engine computes as the CPU engine and counts transfers both ways") {
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("host");
  NDArray a = host.create(std::vector<float>{1, -2, 3, -4}, Shape{2, 2});
  NDArray d = a.to_device(Device::gpu(0));
  CHECK(gpu.from_host_calls() == 1);
  const std::uint64_t kernels = gpu.engine().kernel_calls();
  NDArray r = d.relu().matmul(d).sum();
  CHECK(gpu.engine().kernel_calls() > kernels);
  CHECK(gpu.to_host_calls() == 0);
  CHECK(r.item<float>() == a.relu().matmul(a).sum().item<float>());
  CHECK(gpu.to_host_calls() == 1);
  gpu.reset_counts();
  CHECK(gpu.to_host_calls() == 0);
  CHECK(gpu.from_host_calls() == 0);
}

TEST_CASE("SimGpu's residency check: a host view given to a device kernel is a logic_error, not a silent success") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("sim", Device::gpu(0));
  NDArray d = m.zeros({4});
  std::vector<float> host(4, 1.0f);
  const ops::TensorView host_view = ops::contiguous_view(host.data(), DataType::float32, Shape{4});
  CHECK_THROWS_WITH_AS(gpu.engine().fill(host_view, 2.0), doctest::Contains("fill was given a view that is not in gpu(0)"),
                       std::logic_error);
  // The reverse: a device buffer as to_host's "host" destination.
  std::vector<float> source(4, 3.0f);
  NDArray other = m.zeros({4});
  detail::Pinned pd(d, "test"), po(other, "test");
  CHECK_THROWS_WITH_AS(gpu.engine().to_host(ops::view_of(*pd), ops::view_of(*po)),
                       doctest::Contains("to_host was given a host view that lies in gpu(0)'s memory"),
                       std::logic_error);
  CHECK(gpu.engine().residency_violations() == 2);
  CHECK(host == std::vector<float>(4, 1.0f));  // nothing was written
}
