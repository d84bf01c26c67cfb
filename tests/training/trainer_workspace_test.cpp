// Trainer with WorkspaceMode::enabled: steady-state steps allocate nothing,
// training computes exactly what it does without a workspace, memory is flat.
#include <doctest/doctest.h>

#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "test_util.hpp"

namespace ndgc {
namespace {

training::TrainingConfig config(training::WorkspaceMode mode) {
  training::TrainingConfig c;
  c.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
  c.optimizer = std::make_shared<nn::Adam>(1e-2);
  c.metrics.push_back(std::make_shared<training::Accuracy>());
  c.workspace_mode = mode;
  return c;
}

// Eight fixed batches of a learnable problem (class = arg-max of the first 3 of 8 features).
std::vector<data::Batch> batches(ManagerRef parent) {
  std::vector<data::Batch> out;
  set_random_seed(7);
  for (std::int64_t i = 0; i < 8; ++i) {
    data::Batch b;
    b.manager = parent.new_sub_manager("batch");
    NDArray x = b.manager.random_normal({16, 8});
    b.labels.push_back(x.get(":, 0:3").argmax(1));
    b.data.push_back(x);
    b.size = 16;
    b.index = i;
    out.push_back(std::move(b));
  }
  return out;
}

struct Run {
  std::vector<double> losses;
  std::vector<float> weights;
  double accuracy = 0;
};

Run train(training::WorkspaceMode mode, int epochs) {
  set_random_seed(3);
  Model model("toy", std::make_unique<nn::Mlp>(8, 3, std::vector<std::int64_t>{16}));
  model.initialize(Shape{16, 8});
  training::Trainer trainer(model, config(mode));
  std::vector<data::Batch> data = batches(model.manager());
  Run run;
  trainer.notify_epoch_begin(0);
  for (int e = 0; e < epochs; ++e)
    for (const data::Batch& b : data) run.losses.push_back(trainer.train_batch(b, e));
  run.accuracy = trainer.training_metrics()[1]->value();
  for (const nn::NamedParameter& p : model.parameters()) {
    std::vector<float> w = p.parameter->array().to_vector<float>();
    run.weights.insert(run.weights.end(), w.begin(), w.end());
  }
  return run;
}

}  // namespace

TEST_CASE("workspace mode computes what ordinary memory computes, step for step") {
  Run plain = train(training::WorkspaceMode::none, 3);
  Run ws = train(training::WorkspaceMode::enabled, 3);
  CHECK(ws.losses == plain.losses);
  CHECK(ws.weights == plain.weights);
  CHECK(ws.accuracy == plain.accuracy);
  CHECK(plain.losses.back() < plain.losses.front());
}

TEST_CASE("a steady-state training step in a workspace makes no host allocator call; memory stays flat") {
  Model model("toy", std::make_unique<nn::Mlp>(8, 3, std::vector<std::int64_t>{16}));
  model.initialize(Shape{16, 8});
  training::Trainer trainer(model, config(training::WorkspaceMode::enabled));
  std::vector<data::Batch> data = batches(model.manager());
  trainer.notify_epoch_begin(0);
  // The first step spills and learns the size; the second allocates the arena.
  trainer.train_batch(data[0]);
  trainer.train_batch(data[1]);
  const memory::Stats before = memory::stats(Device::cpu());
  for (int step = 0; step < 30; ++step) trainer.train_batch(data[std::size_t(step) % data.size()]);
  const memory::Stats after = memory::stats(Device::cpu());
  CHECK(after.allocations == before.allocations);
  CHECK(after.current_bytes == before.current_bytes);
  workspace::Stats s = workspace::stats(trainer.workspace_name());
  CHECK(s.cycles == 32);
  CHECK(s.capacity > 0);
  CHECK(s.reallocations == 0);
  CHECK(s.spilled_bytes > 0);  // the learning step only
  const std::uint64_t learned_spill = s.spilled_bytes;
  trainer.train_batch(data[0]);
  CHECK(workspace::stats(trainer.workspace_name()).spilled_bytes == learned_spill);
}

TEST_CASE("the trainer destroys its step workspace") {
  std::string name;
  const std::uint64_t base = test::host_bytes();
  {
    Model model("toy", std::make_unique<nn::Mlp>(8, 3, std::vector<std::int64_t>{16}));
    model.initialize(Shape{16, 8});
    training::Trainer trainer(model, config(training::WorkspaceMode::enabled));
    std::vector<data::Batch> data = batches(model.manager());
    trainer.notify_epoch_begin(0);
    for (const data::Batch& b : data) trainer.train_batch(b);
    name = trainer.workspace_name();
    CHECK(workspace::exists(name));
  }
  CHECK_FALSE(workspace::exists(name));
  CHECK(test::host_bytes() == base);
}

}  // namespace ndgc
