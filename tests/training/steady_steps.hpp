// A steady training loop for tests that count something per step (heap
// allocations, page faults): a model of `architecture` on random rows of 784
// features (Fashion-MNIST's size), 10 classes, softmax cross entropy, Adam,
// shuffled batches; one step = fetching the next batch and train_batch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <doctest/doctest.h>

#include <ndgc/data.hpp>
#include <ndgc/model_file.hpp>
#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "test_util.hpp"

namespace ndgc::test {

struct SteadyRun {
  Architecture architecture = Architecture::mlp(784, 10, {128, 64});
  std::int64_t batch = 32;
  bool autoclose = false;
  bool workspace = false;
  int warmup = 20;    // steps before counting
  int measured = 20;  // steps counted
  int windows = 1;    // measured is cut into this many windows (it divides measured)
};

// The mean growth of `count()` per step over run.measured steps, after
// run.warmup: over the window of the least growth when there are several
// (a cost of every step shows in each window, a one-off event in one).
inline double per_step(const SteadyRun& run, const std::function<std::uint64_t()>& count) {
  constexpr std::int64_t kIn = 784;
  AutoClose ac(run.autoclose);
  set_random_seed(3);
  Model model("steady " + run.architecture.name, run.architecture.make_block());
  model.initialize(Shape{run.batch, kIn});
  const std::int64_t rows = std::int64_t(run.warmup + run.measured + 1) * run.batch;
  NDArray x = model.manager().random_uniform({rows, kIn});
  NDArray y = model.manager().random_uniform({rows}, 0, 10).to_type(DataType::int64);
  data::ArrayDataset train(x, y);
  train.set_batch_size(run.batch).set_shuffle(true, 42);
  training::TrainingConfig config;
  config.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
  config.optimizer = std::make_shared<nn::Adam>(1e-3);
  if (run.workspace) config.workspace_mode = training::WorkspaceMode::enabled;
  training::Trainer trainer(model, config);
  REQUIRE(run.windows >= 1);
  REQUIRE(run.measured % run.windows == 0);
  const int window = run.measured / run.windows;
  int step = 0;
  std::uint64_t start = 0, least = UINT64_MAX;
  for (data::Batch& batch : train.batches(trainer.manager(), 0)) {
    // The count spans ++it (closing the previous batch, making this one) too.
    if (step >= run.warmup && (step - run.warmup) % window == 0) {
      const std::uint64_t now = count();
      if (step > run.warmup) least = std::min(least, now - start);
      start = now;
    }
    if (step == run.warmup + run.measured) break;
    trainer.train_batch(batch);
    ++step;
  }
  REQUIRE(step == run.warmup + run.measured);
  return double(least) / window;
}

}  // namespace ndgc::test
