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

TEST_CASE("random draws and dropout in a CUDA graph: each replay draws what the eager calls draw at that point") {
  NDManager g = NDManager::new_base_manager("graph draws", Device::gpu(0));
  NDArray x = g.ones({4096});
  set_random_seed(21);
  std::vector<std::vector<float>> eager;  // two steps of dropout, a uniform and a normal draw
  for (int step = 0; step < 2; ++step) {
    eager.push_back(dropout(x, 0.5, true).to_vector<float>());
    eager.push_back(g.random_uniform({64}).to_vector<float>());
    eager.push_back(g.random_normal({64}).to_vector<float>());
  }
  CHECK(eager[0] != eager[3]);
  set_random_seed(21);
  NDArray d, u, n;
  DeviceGraph graph = DeviceGraph::capture(Device::gpu(0), [&] {
    d = dropout(x, 0.5, true);
    u = g.random_uniform({64});
    n = g.random_normal({64});
  });
  for (std::size_t step = 0; step < 2; ++step) {
    graph.replay();
    CHECK(d.to_vector<float>() == eager[3 * step]);
    CHECK(u.to_vector<float>() == eager[3 * step + 1]);
    CHECK(n.to_vector<float>() == eager[3 * step + 2]);
  }
}

TEST_CASE("dropout's backward in a CUDA graph redraws its replay's mask; a mask drawn before the capture is refused") {
  NDManager g = NDManager::new_base_manager("graph dropout", Device::gpu(0));
  NDArray x = g.ones({1024}).set_requires_gradient(true);
  NDArray y;
  DeviceGraph graph = DeviceGraph::capture(Device::gpu(0), [&] {
    GradientCollector gc;
    y = dropout(x, 0.5, true);
    gc.backward(y.sum());
  });
  std::vector<float> first;
  for (int step = 0; step < 2; ++step) {
    x.gradient().fill_(0);
    graph.replay();
    CHECK(x.gradient().to_vector<float>() == y.to_vector<float>());  // d sum(mask * 2x) / dx = mask * 2 = y
    if (step == 0) first = y.to_vector<float>();
  }
  CHECK(y.to_vector<float>() != first);

  NDArray z;
  GradientCollector gc;
  z = dropout(x, 0.5, true);  // eager: its mask's position was reserved outside the capture
  CHECK_THROWS_WITH_AS(DeviceGraph::capture(Device::gpu(0), [&] { gc.backward(z.sum()); }),
                       doctest::Contains("dropout on gpu(0) while this thread captures a device graph: its random "
                                         "numbers were drawn before the capture began"),
                       InvalidArgument);
  CHECK(dropout(x, 0.5, true).size() == 1024);  // the device stays usable

  // The other way round: a mask drawn in a capture, its backward run eagerly after it.
  NDArray captured;
  GradientCollector outside;
  DeviceGraph forward_only = DeviceGraph::capture(Device::gpu(0), [&] { captured = dropout(x, 0.5, true); });
  forward_only.replay();
  CHECK_THROWS_WITH_AS(outside.backward(captured.sum()),
                       doctest::Contains("only a replay of that graph can draw them"), InvalidArgument);
}

TEST_CASE("training steps with dropout replayed from a CUDA graph draw the eager steps' masks") {
  training::TrainingConfig c = test::toy_config();
  const test::ToyRun eager = test::fit_toy_problem(Device::gpu(0), 100, 2, c, 0.3);
  c.cuda_graph = true;
  const test::ToyRun graphed = test::fit_toy_problem(Device::gpu(0), 100, 2, c, 0.3);
  CHECK(graphed.graph_captures == 1);
  REQUIRE(graphed.parameters.size() == eager.parameters.size());
  for (std::size_t i = 0; i < eager.parameters.size(); ++i)
    for (std::size_t j = 0; j < eager.parameters[i].size(); ++j)
      CHECK(graphed.parameters[i][j] == doctest::Approx(eager.parameters[i][j]).epsilon(1e-5));
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
