// DeviceGraph (ops/device_graph.cpp) on the simulated GPU, which records a
// capture and replays it as the CUDA engine does (tests/sim_gpu.hpp): a
// capture runs nothing and each replay runs it all; inputs refilled in place
// reach the replay; memory made during the capture is the graph's until it
// goes (Note [Private pools]); host transfers and exceptions end a capture
// cleanly; errors name what went wrong. tests/gpu/graph_test.cpp runs the
// same on a GPU.
#include <doctest/doctest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <ndgc/ndgc.hpp>

#include "sim_gpu.hpp"

using namespace ndgc;

namespace {
std::vector<float> graph_values(const NDArray& a) { return a.to_vector<float>(); }

// After a capture that ended badly, with x four ones: eager reads and a new capture work.
void check_still_usable(const NDArray& x) {
  CHECK(x.sum().item<float>() == 4);
  NDArray y;
  DeviceGraph graph = DeviceGraph::capture(Device::gpu(0), [&] { y = x.mul(2.0); });
  graph.replay();
  CHECK(graph_values(y) == std::vector<float>{2, 2, 2, 2});
}
}  // namespace

TEST_CASE("a capture records without running; each replay runs the recording on the inputs as they are then") {
  test::SimGpu gpu;
  NDManager g = NDManager::new_base_manager("graph", Device::gpu(0));
  NDArray counter = g.zeros({3}), x = g.ones({3});
  NDArray y;
  DeviceGraph graph = DeviceGraph::capture(Device::gpu(0), [&] {
    counter.add_(1);
    y = x.mul(2.0).add(1.0);
  });
  CHECK(graph.device() == Device::gpu(0));
  CHECK(graph_values(counter) == std::vector<float>{0, 0, 0});  // recorded, not run
  graph.replay();
  graph.replay();
  CHECK(graph_values(counter) == std::vector<float>{2, 2, 2});
  CHECK(graph_values(y) == std::vector<float>{3, 3, 3});
  x.assign_(g.create(std::vector<float>{1, 2, 3}));  // new values, same memory
  graph.replay();
  CHECK(graph_values(y) == std::vector<float>{3, 5, 7});
  CHECK(graph_values(counter) == std::vector<float>{3, 3, 3});
  CHECK(gpu.engine().replays() == 3);
}

TEST_CASE("memory made during a capture is the graph's until the graph goes") {
  test::SimGpu gpu;
  NDManager g = NDManager::new_base_manager("pool", Device::gpu(0));
  NDArray x = g.ones({256});
  std::optional<DeviceGraph> graph;
  {
    NDArray y;
    graph.emplace(DeviceGraph::capture(Device::gpu(0), [&] { y = x.mul(2.0); }));
    y.close();  // its memory goes back to the graph's pool, where a replay writes it
  }
  NDArray z = g.zeros({256});  // the same size: a block the ordinary cache would hand out first
  graph->replay();
  CHECK(z.sum().item<float>() == 0);  // the replay wrote elsewhere
  CHECK(memory::stats(Device::gpu(0)).reserved_bytes == 2 * (2 << 20));  // the graph's segment beside the ordinary one
  graph.reset();  // its pool becomes ordinary cache (tests/memory/caching_allocator_test.cpp has the policy)
  CHECK(memory::stats(Device::gpu(0)).reserved_bytes == 2 * (2 << 20));
}

TEST_CASE("a host transfer inside a capture throws InvalidArgument and ends the capture") {
  test::SimGpu gpu;
  NDManager g = NDManager::new_base_manager("host read", Device::gpu(0));
  NDArray x = g.ones({4});
  CHECK_THROWS_WITH_AS(DeviceGraph::capture(Device::gpu(0), [&] { (void)x.sum().item<float>(); }),
                       doctest::Contains("a copy to the host while this thread captures"), InvalidArgument);
  NDManager host = NDManager::new_base_manager("host");
  NDArray h = host.ones({4});
  CHECK_THROWS_WITH_AS(DeviceGraph::capture(Device::gpu(0), [&] { (void)h.to_device(Device::gpu(0)); }),
                       doctest::Contains("a copy from the host while this thread captures"), InvalidArgument);
  check_still_usable(x);
}

TEST_CASE("an exception thrown by the work ends the capture and reaches the caller") {
  test::SimGpu gpu;
  NDManager g = NDManager::new_base_manager("throws", Device::gpu(0));
  NDArray x = g.ones({4});
  CHECK_THROWS_WITH_AS(DeviceGraph::capture(Device::gpu(0),
                                            [&] {
                                              (void)x.mul(3.0);
                                              throw std::runtime_error("the work failed");
                                            }),
                       "the work failed", std::runtime_error);
  check_still_usable(x);
}

TEST_CASE("one capture at a time per device: a second, nested or from another thread, throws InvalidArgument") {
  test::SimGpu gpu;
  NDManager g = NDManager::new_base_manager("two", Device::gpu(0));
  NDArray x = g.ones({4});
  NDArray y;
  // The message of the InvalidArgument a capture throws, or "" if none.
  auto refused = [] {
    try {
      (void)DeviceGraph::capture(Device::gpu(0), [] {});
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string nested_error, other_thread_error;
  DeviceGraph graph = DeviceGraph::capture(Device::gpu(0), [&] {
    y = x.mul(2.0);
    nested_error = refused();
    std::thread other([&] { other_thread_error = refused(); });
    other.join();
  });
  CHECK(nested_error.find("gpu(0) is already capturing a graph") != std::string::npos);
  CHECK(other_thread_error.find("gpu(0) is already capturing a graph") != std::string::npos);
  graph.replay();  // the refused captures left the first one's pool alone
  NDArray z = g.zeros({4});
  graph.replay();
  CHECK(graph_values(y) == std::vector<float>{2, 2, 2, 2});
  CHECK(graph_values(z) == std::vector<float>{0, 0, 0, 0});
  DeviceGraph next = DeviceGraph::capture(Device::gpu(0), [] {});  // the slot is free again
}

TEST_CASE("DeviceGraph errors name the device and what to do") {
  CHECK_THROWS_WITH_AS(DeviceGraph::capture(Device::cpu(), [] {}), doctest::Contains("cpu() has no device graphs"),
                       InvalidArgument);
  test::SimGpu gpu;
  DeviceGraph graph = DeviceGraph::capture(Device::gpu(0), [] {});
  graph.replay();  // an empty graph is a graph
  DeviceGraph moved = std::move(graph);
  CHECK_THROWS_WITH_AS(graph.replay(), doctest::Contains("moved from"), InvalidArgument);  // NOLINT(bugprone-use-after-move)
  moved.replay();
}

TEST_CASE("random draws in a capture: each replay draws what the same calls draw eagerly at that point of the stream") {
  test::SimGpu gpu;
  NDManager g = NDManager::new_base_manager("draws", Device::gpu(0));
  set_random_seed(11);
  std::vector<std::vector<float>> eager;  // three steps of a uniform and a normal draw
  for (int step = 0; step < 3; ++step) {
    eager.push_back(g.random_uniform({16}).to_vector<float>());
    eager.push_back(g.random_normal({8}).to_vector<float>());
  }
  CHECK(eager[0] != eager[2]);

  set_random_seed(11);
  NDArray u, n;
  DeviceGraph graph = DeviceGraph::capture(Device::gpu(0), [&] {
    u = g.random_uniform({16});
    n = g.random_normal({8});
  });
  // The capture reserved nothing: an eager draw now is the first step's.
  CHECK(g.random_uniform({16}).to_vector<float>() == eager[0]);
  set_random_seed(11);
  for (int step = 0; step < 2; ++step) {
    graph.replay();
    CHECK(graph_values(u) == eager[std::size_t(2 * step)]);
    CHECK(graph_values(n) == eager[std::size_t(2 * step + 1)]);
  }
  CHECK(g.random_uniform({16}).to_vector<float>() == eager[4]);  // the replays moved the stream on
}
