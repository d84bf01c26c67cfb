// Training steps replayed from a device graph (TrainingConfig::cuda_graph,
// Note [Captured steps] in training/trainer.cpp), on the simulated GPU,
// which records a capture and replays it as the CUDA engine does
// (tests/sim_gpu.hpp). The same CPU kernels run in the same order either
// way, so a graphed run must give the eager run's parameters and history
// bit for bit: any value the capture froze (a step count, a learning rate,
// an input address) would show. tests/gpu/graph_test.cpp runs it on a GPU.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "sim_gpu.hpp"
#include "toy_problem.hpp"

namespace ndgc {
namespace {

// Live arrays at each epoch's end (auto-close is off: what a step leaves, stays).
struct CountArrays : training::TrainingListener {
  explicit CountArrays(std::vector<std::size_t>& out) : counts(out) {}
  void on_epoch_end(training::Trainer&, std::int64_t) override { counts.push_back(debug::snapshot().arrays.size()); }
  std::vector<std::size_t>& counts;
};

// Halves the learning rate at the end of every epoch (a schedule).
struct HalveEachEpoch : training::TrainingListener {
  void on_epoch_end(training::Trainer& trainer, std::int64_t) override {
    trainer.config().optimizer->set_learning_rate(trainer.config().optimizer->learning_rate() / 2);
  }
};

struct GraphRun : test::ToyRun {
  std::vector<std::size_t> live_arrays;  // at each epoch's end
};

// `epochs` of fit() on `rows` rows (batches of 16), on the simulated gpu(0).
GraphRun train(bool graph, std::int64_t rows, std::int64_t epochs, bool schedule = false) {
  training::TrainingConfig c = test::toy_config();
  c.cuda_graph = graph;
  if (schedule) c.listeners.push_back(std::make_shared<HalveEachEpoch>());
  GraphRun out;
  c.listeners.push_back(std::make_shared<CountArrays>(out.live_arrays));
  static_cast<test::ToyRun&>(out) = test::fit_toy_problem(Device::gpu(0), rows, epochs, std::move(c));
  return out;
}

void check_identical(const test::ToyRun& graphed, const test::ToyRun& eager) {
  CHECK(graphed.parameters == eager.parameters);
  REQUIRE(graphed.history.size() == eager.history.size());
  for (std::size_t e = 0; e < eager.history.size(); ++e) CHECK(graphed.history[e] == eager.history[e]);
}

}  // namespace

TEST_CASE("a graphed step trains to the eager step's parameters and history, bit for bit") {
  test::SimGpu gpu;
  const GraphRun eager = train(false, 96, 3);  // 6 full batches an epoch
  const GraphRun graphed = train(true, 96, 3);
  check_identical(graphed, eager);
  CHECK(eager.graph_captures == 0);
  CHECK(eager.graph_replays == 0);
  CHECK(graphed.graph_captures == 1);
  CHECK(graphed.graph_replays == 3 * 6 - training::Trainer::kGraphWarmupSteps);
  CHECK(gpu.engine().replays() == std::uint64_t(graphed.graph_replays));
  // A replayed step leaves nothing behind: what it makes closes with its batch.
  REQUIRE(graphed.live_arrays.size() == 3);
  CHECK(graphed.live_arrays[2] == graphed.live_arrays[1]);
  CHECK(eager.live_arrays[2] == eager.live_arrays[1]);
  CHECK(gpu.bytes_in_use() == 0);  // the graph's arrays went with the trainer, the rest with the model
}

TEST_CASE("a batch of other shapes (the short last one) runs eagerly; the graph replays the rest") {
  test::SimGpu gpu;
  const GraphRun eager = train(false, 100, 2);  // 6 batches of 16 and one of 4 an epoch
  const GraphRun graphed = train(true, 100, 2);
  check_identical(graphed, eager);
  CHECK(graphed.graph_captures == 1);
  CHECK(graphed.graph_replays == 2 * 6 - training::Trainer::kGraphWarmupSteps);
}

TEST_CASE("a new learning rate is captured again") {
  test::SimGpu gpu;
  const GraphRun eager = train(false, 96, 3, true);
  const GraphRun graphed = train(true, 96, 3, true);
  check_identical(graphed, eager);
  CHECK(graphed.graph_captures == 3);  // one per epoch: the rate halves at each epoch's end
  CHECK(graphed.graph_replays == 3 * 6 - training::Trainer::kGraphWarmupSteps);
}

TEST_CASE("cuda_graph needs a GPU and neither workspaces nor a gradient reducer") {
  Model cpu_model("toy", std::make_unique<nn::Mlp>(test::kToyFeatures, test::kToyClasses, std::vector<std::int64_t>{4}));
  cpu_model.initialize(Shape{test::kToyBatch, test::kToyFeatures});
  training::TrainingConfig c = test::toy_config();
  c.cuda_graph = true;
  CHECK_THROWS_WITH_AS(training::Trainer(cpu_model, c), doctest::Contains("cuda_graph needs a model on a GPU"),
                       InvalidArgument);
  test::SimGpu gpu;
  Model model("toy", std::make_unique<nn::Mlp>(test::kToyFeatures, test::kToyClasses, std::vector<std::int64_t>{4}),
              Device::gpu(0));
  model.initialize(Shape{test::kToyBatch, test::kToyFeatures});
  c.workspace_mode = training::WorkspaceMode::enabled;
  CHECK_THROWS_WITH_AS(training::Trainer(model, c), doctest::Contains("cuda_graph and workspaces"), InvalidArgument);
  // A reducer of one rank: refused before the Trainer uses it (it would broadcast).
  struct OneRank : training::GradientReducer {
    int rank() const override { return 0; }
    int size() const override { return 1; }
    void broadcast_parameters(const NDList&) override { FAIL("the refused Trainer broadcast the parameters"); }
    void reduce_gradients(const NDList&, std::int64_t) override {}
    void sum(std::vector<double>&) override {}
  };
  c.workspace_mode = training::WorkspaceMode::none;
  c.gradient_reducer = std::make_shared<OneRank>();
  CHECK_THROWS_WITH_AS(training::Trainer(model, c), doctest::Contains("cuda_graph cannot capture a gradient reducer"),
                       InvalidArgument);
}

}  // namespace ndgc
