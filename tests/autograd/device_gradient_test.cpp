// Gradients across devices (Note [Gradient across devices] in
// src/autograd/rules.cpp), on the simulated GPU (tests/sim_gpu.hpp):
// backward through x.to_device(d) sends the gradient back to x's device, so
// the result equals the all-CPU computation; the transfers it makes; and the
// error paths (a closed source, mixed devices, an unavailable device, an
// integer copy that cuts the graph).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <ndgc/autograd.hpp>
#include <ndgc/ndgc.hpp>

#include "sim_gpu.hpp"

namespace ndgc {
namespace {

std::vector<float> values(const NDArray& a) { return a.to_vector<float>(); }

void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
}

// The same two-layer computation wherever its pieces are: x [4, 3] · w1 [3, 5],
// ReLU, · w2 [5, 2], log_softmax, mean. `devices` says where w1's product and
// the rest run.
struct Net {
  NDArray x, w1, w2;
  explicit Net(const ManagerRef& m) {
    x = m.create(std::vector<float>{0.5f, -1, 2, 1.5f, 0.25f, -0.75f, -2, 1, 0.1f, 3, -0.5f, 0.8f}, Shape{4, 3});
    w1 = m.create(std::vector<float>{0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 0.7f, -0.8f, 0.9f, 1.0f, -1.1f, 1.2f,
                                     1.3f, -1.4f, 1.5f},
                  Shape{3, 5});
    w2 = m.create(std::vector<float>{0.2f, -0.1f, 0.4f, 0.3f, -0.6f, 0.5f, 0.8f, -0.7f, 1.0f, 0.9f}, Shape{5, 2});
    w1.set_name("w1");
    w2.set_name("w2");
    w1.set_requires_gradient(true);
    w2.set_requires_gradient(true);
  }
};

NDArray loss_of(const NDArray& x, const NDArray& w1, const NDArray& w2) {
  return x.matmul(w1).relu().matmul(w2).log_softmax(-1).mean();
}

struct Reference {
  std::vector<float> g1, g2;
  float loss = 0;
};

Reference on_cpu() {
  NDManager m = NDManager::new_base_manager("cpu-net");
  Net net(m);
  GradientCollector c;
  NDArray loss = loss_of(net.x, net.w1, net.w2);
  c.backward(loss);
  return {values(net.w1.gradient()), values(net.w2.gradient()), loss.item<float>()};
}

}  // namespace

TEST_CASE("parameters on the CPU, the computation on the GPU: gradients come back to the CPU, equal to the CPU's") {
  const Reference want = on_cpu();
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("host-params");
  Net net(m);
  GradientCollector c;
  NDArray loss = loss_of(net.x.to_device(Device::gpu(0)), net.w1.to_device(Device::gpu(0)),
                         net.w2.to_device(Device::gpu(0)));
  CHECK(loss.device() == Device::gpu(0));
  const std::uint64_t to_host = gpu.to_host_calls();
  c.backward(loss);
  // Two gradients cross back (w1's and w2's); x requires none, so nothing is sent for it.
  CHECK(gpu.to_host_calls() == to_host + 2);
  CHECK(net.w1.gradient().device() == Device::cpu());
  check_close(values(net.w1.gradient()), want.g1);
  check_close(values(net.w2.gradient()), want.g2);
  CHECK(loss.item<float>() == doctest::Approx(want.loss));
}

TEST_CASE("parameters on the GPU, the loss on the CPU: gradients go to the GPU, equal to the CPU's") {
  const Reference want = on_cpu();
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("host");
  Net reference(host);  // the same values, copied onto the GPU below
  NDManager g = NDManager::new_base_manager("gpu-params", Device::gpu(0));
  NDArray x = reference.x.to_device(Device::gpu(0));
  NDArray w1 = reference.w1.to_device(Device::gpu(0)), w2 = reference.w2.to_device(Device::gpu(0));
  w1.attach(g), w2.attach(g);
  w1.set_requires_gradient(true);
  w2.set_requires_gradient(true);
  CHECK(w1.gradient().device() == Device::gpu(0));
  GradientCollector c;
  NDArray hidden = x.matmul(w1).relu().matmul(w2);          // on the GPU
  NDArray loss = hidden.to_device(Device::cpu()).log_softmax(-1).mean();  // on the CPU
  CHECK(loss.device() == Device::cpu());
  const std::uint64_t from_host = gpu.from_host_calls(), to_host = gpu.to_host_calls();
  c.backward(loss);
  CHECK(gpu.from_host_calls() == from_host + 1);  // the one gradient that crosses: hidden's
  CHECK(gpu.to_host_calls() == to_host);
  check_close(values(w1.gradient()), want.g1);
  check_close(values(w2.gradient()), want.g2);
  CHECK(values(reference.w1.gradient()) == std::vector<float>(15, 0.0f));  // its copies were the leaves
}

TEST_CASE("to_device to the array's own device passes the gradient through, as a copy does") {
  test::SimGpu gpu;
  NDManager g = NDManager::new_base_manager("gpu", Device::gpu(0));
  NDArray w = g.create(std::vector<float>{1, 2, 3}).set_requires_gradient(true);
  GradientCollector c;
  NDArray y = w.to_device(Device::gpu(0)).square().sum();
  const std::uint64_t to_host = gpu.to_host_calls(), from_host = gpu.from_host_calls();
  c.backward(y);
  CHECK(gpu.to_host_calls() == to_host);
  CHECK(gpu.from_host_calls() == from_host);
  CHECK(values(w.gradient()) == std::vector<float>{2, 4, 6});
}

TEST_CASE("a chain cpu → gpu → cpu differentiates through both copies") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("host");
  NDArray w = m.create(std::vector<float>{1, -2, 3}).set_requires_gradient(true);
  GradientCollector c;
  NDArray y = w.to_device(Device::gpu(0)).mul(3.0).to_device(Device::cpu()).square().sum();  // sum (3w)^2
  c.backward(y);
  CHECK(values(w.gradient()) == std::vector<float>{18, -36, 54});  // 18 w
}

TEST_CASE("backward through to_device whose source was closed since: ArrayClosed naming it") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("host");
  NDArray w = m.create(std::vector<float>{1, 2}).set_requires_gradient(true);
  w.set_name("w-source");
  NDManager g = NDManager::new_base_manager("gpu", Device::gpu(0));
  GradientCollector c;
  NDArray y = w.to_device(Device::gpu(0));
  y.attach(g);  // keeps the copy open when w closes
  NDArray loss = y.sum();
  w.close();
  CHECK_THROWS_WITH_AS(c.backward(loss), doctest::Contains("w-source"), ArrayClosed);
}

TEST_CASE("under a collector, mixing a copy with its source is DeviceMismatch naming both devices; the tape stays usable") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("host");
  NDArray w = m.create(std::vector<float>{1, 2}).set_requires_gradient(true);
  GradientCollector c;
  NDArray d = w.to_device(Device::gpu(0));
  CHECK_THROWS_WITH_AS(d.add(w), doctest::Contains("cpu()"), DeviceMismatch);
  CHECK_THROWS_WITH_AS(d.add(w), doctest::Contains("gpu(0)"), DeviceMismatch);
  c.backward(d.mul(2.0).sum());
  CHECK(values(w.gradient()) == std::vector<float>{2, 2});
}

TEST_CASE("under a collector, to_device to an unavailable GPU is InvalidArgument and records nothing") {
  test::SimGpu gpu;  // gpu(0) only
  NDManager m = NDManager::new_base_manager("host");
  NDArray w = m.create(std::vector<float>{1, 2}).set_requires_gradient(true);
  const std::size_t arrays = m.array_count();
  GradientCollector c;
  CHECK_THROWS_WITH_AS(w.to_device(Device::gpu(1)), doctest::Contains("gpu(1)"), InvalidArgument);
  CHECK(m.array_count() == arrays);
  c.backward(w.to_device(Device::gpu(0)).sum());
  CHECK(values(w.gradient()) == std::vector<float>{1, 1});
}

TEST_CASE("an integer copy to the GPU cuts the graph: backward from it is InvalidArgument") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("host");
  NDArray w = m.create(std::vector<float>{1, 2}).set_requires_gradient(true);
  GradientCollector c;
  NDArray y = w.to_type(DataType::int32).to_device(Device::gpu(0)).to_type(DataType::float32).sum();
  CHECK_THROWS_WITH_AS(c.backward(y), doctest::Contains("requires a gradient"), InvalidArgument);
}

}  // namespace ndgc
