// An ndgc training step timed as a user's loop runs it: Trainer::train_batch
// (softmax cross-entropy, Adam 1e-3) on one fixed random batch
// [batch, features] with labels in [0, classes), at state.range(0) intra-op
// threads, after three warm-up steps; one step per iteration. Each step's
// batch is views of the fixed arrays in a fresh sub-manager, as a real
// batch's arrays are, so the step's arrays close with it. Counters: "loss"
// (the last step's), "peak_MiB" (host bytes in use at most over the measured
// steps) and "threads". `make_block` builds the model's block.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>

#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

template <class MakeBlock>
void time_ndgc_steps(benchmark::State& state, MakeBlock&& make_block, std::int64_t batch, std::int64_t features,
                     std::int64_t classes,
                     ndgc::training::WorkspaceMode workspace = ndgc::training::WorkspaceMode::none) {
  using namespace ndgc;
  const int saved = num_threads();
  set_num_threads(int(state.range(0)));
  {
    set_random_seed(7);
    Model model("bench", make_block());
    model.initialize(Shape{batch, features});
    training::TrainingConfig config;
    config.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
    config.optimizer = std::make_shared<nn::Adam>(1e-3);
    config.workspace_mode = workspace;
    training::Trainer trainer(model, config);
    NDArray x = model.manager().random_uniform({batch, features});
    NDArray y = model.manager().random_uniform({batch}, 0, double(classes)).to_type(DataType::int64);
    trainer.notify_epoch_begin(0);
    auto step = [&] {
      data::Batch b;
      b.manager = trainer.manager().new_sub_manager("batch");
      b.data.push_back(x.get(b.manager, ":"));
      b.labels.push_back(y.get(b.manager, ":"));
      b.size = batch;
      return trainer.train_batch(b, 0);
    };
    for (int i = 0; i < 3; ++i) step();
    memory::reset_peak(Device::cpu());
    double loss = 0;
    for (auto _ : state) loss = step();
    state.counters["loss"] = loss;
    state.counters["peak_MiB"] = double(memory::stats(Device::cpu()).peak_bytes) / (1 << 20);
  }
  state.counters["threads"] = num_threads();
  set_num_threads(saved);
}
