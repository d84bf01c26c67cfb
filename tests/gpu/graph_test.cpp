// Device graphs on a real GPU (issue 14, item 3): what tests/ops/device_graph_test.cpp
// and tests/training/trainer_graph_test.cpp check on the simulated GPU, through CUDA's
// stream capture, cuBLAS included. Runs only where gpu_main.cpp found a usable device.
#include <doctest/doctest.h>

#include <optional>
#include <vector>

#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "toy_problem.hpp"

using namespace ndgc;

TEST_CASE("a CUDA graph records without running; replays run it on the inputs as they are then") {
  NDManager g = NDManager::new_base_manager("graph", Device::gpu(0));
  NDArray counter = g.zeros({3}), x = g.ones({2, 3}), w = g.full({3, 3}, 0.5);
  NDArray y;
  DeviceGraph graph = DeviceGraph::capture(Device::gpu(0), [&] {
    counter.add_(1);
    y = x.matmul(w).relu().sum({0});  // cuBLAS and a reduction inside the graph
  });
  CHECK(counter.to_vector<float>() == std::vector<float>{0, 0, 0});
  graph.replay();
  graph.replay();
  CHECK(counter.to_vector<float>() == std::vector<float>{2, 2, 2});
  CHECK(y.to_vector<float>() == std::vector<float>{3, 3, 3});
  x.assign_(g.full({2, 3}, 2.0));
  graph.replay();
  CHECK(y.to_vector<float>() == std::vector<float>{6, 6, 6});
}

TEST_CASE("memory made during a CUDA graph's capture is not handed out while the graph lives") {
  NDManager g = NDManager::new_base_manager("pool", Device::gpu(0));
  NDArray x = g.ones({1 << 16});
  std::optional<DeviceGraph> graph;
  {
    NDArray y;
    graph.emplace(DeviceGraph::capture(Device::gpu(0), [&] { y = x.mul(2.0); }));
    y.close();
  }
  NDArray z = g.zeros({1 << 16});
  for (int i = 0; i < 3; ++i) graph->replay();
  CHECK(z.sum().item<float>() == 0);
  graph.reset();
}

TEST_CASE("host reads inside a CUDA graph's capture throw InvalidArgument; the device stays usable") {
  NDManager g = NDManager::new_base_manager("host read", Device::gpu(0));
  NDArray x = g.ones({4});
  CHECK_THROWS_WITH_AS(DeviceGraph::capture(Device::gpu(0), [&] { (void)x.sum().item<float>(); }),
                       doctest::Contains("while this thread captures a device graph"), InvalidArgument);
  CHECK(x.sum().item<float>() == 4);
  NDArray y;
  DeviceGraph graph = DeviceGraph::capture(Device::gpu(0), [&] { y = x.add(x); });
  graph.replay();
  CHECK(y.to_vector<float>() == std::vector<float>{2, 2, 2, 2});
}

TEST_CASE("random draws and dropout inside a CUDA graph's capture throw InvalidArgument: a replay would repeat them") {
  NDManager g = NDManager::new_base_manager("graph draws", Device::gpu(0));
  NDArray x = g.ones({64});
  CHECK_THROWS_WITH_AS(DeviceGraph::capture(Device::gpu(0), [&] { (void)dropout(x, 0.5, true); }),
                       doctest::Contains("dropout on gpu(0) while this thread captures a device graph"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(DeviceGraph::capture(Device::gpu(0), [&] { (void)g.random_uniform({8}); }),
                       doctest::Contains("random_uniform on gpu(0) while this thread captures"), InvalidArgument);
  CHECK_THROWS_WITH_AS(DeviceGraph::capture(Device::gpu(0), [&] { (void)g.random_normal({8}); }),
                       doctest::Contains("random_normal on gpu(0) while this thread captures"), InvalidArgument);
  // Evaluation-mode dropout draws nothing and is captured; the device stays usable.
  NDArray y;
  DeviceGraph graph = DeviceGraph::capture(Device::gpu(0), [&] { y = dropout(x, 0.5, false).add(x); });
  graph.replay();
  CHECK(y.sum().item<float>() == 128);
  CHECK(dropout(x, 0.5, true).size() == 64);
}

TEST_CASE("training steps replayed from a CUDA graph reach the eager steps' parameters and history") {
  training::TrainingConfig c = test::toy_config();
  const test::ToyRun eager = test::fit_toy_problem(Device::gpu(0), 100, 3, c);
  const std::uint64_t before = memory::stats(Device::gpu(0)).current_bytes;
  c.cuda_graph = true;
  const test::ToyRun graphed = test::fit_toy_problem(Device::gpu(0), 100, 3, c);
  CHECK(memory::stats(Device::gpu(0)).current_bytes == before);
  CHECK(graphed.graph_captures == 1);
  CHECK(graphed.graph_replays == 3 * 6 - training::Trainer::kGraphWarmupSteps);
  REQUIRE(graphed.parameters.size() == eager.parameters.size());
  for (std::size_t i = 0; i < eager.parameters.size(); ++i)
    for (std::size_t j = 0; j < eager.parameters[i].size(); ++j)
      CHECK(graphed.parameters[i][j] == doctest::Approx(eager.parameters[i][j]).epsilon(1e-5));
  REQUIRE(graphed.history.size() == eager.history.size());
  for (std::size_t e = 0; e < eager.history.size(); ++e)
    for (const auto& [key, value] : eager.history[e]) {
      CAPTURE(key);
      CHECK(graphed.history[e].at(key) == doctest::Approx(value).epsilon(1e-5));
    }
}
