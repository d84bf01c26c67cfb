// Training with the intra-op pool: the same bits at every thread count, with
// auto-close on and a step workspace, and a steady step that still makes no
// host allocator call (the pool's threads allocate nothing: Note [What pool
// threads may do] in src/support/thread_pool.cpp).
#include <doctest/doctest.h>

#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "test_util.hpp"

namespace ndgc {
namespace {

struct ThreadsRun {
  std::vector<double> losses;
  std::vector<float> weights;
  std::uint64_t steady_allocations = 0;
  std::uint64_t live_arrays_after = 0;
};

// Wide enough that the products, the gradients and Adam run on the pool.
ThreadsRun train(int threads) {
  const int saved = num_threads();
  set_num_threads(threads);
  test::AutoClose autoclose(true);
  ThreadsRun run;
  {
    set_random_seed(3);
    Model model("wide", std::make_unique<nn::Mlp>(64, 10, std::vector<std::int64_t>{512, 256}));
    model.initialize(Shape{256, 64});
    training::TrainingConfig c;
    c.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
    c.optimizer = std::make_shared<nn::Adam>(1e-3);
    c.workspace_mode = training::WorkspaceMode::enabled;
    training::Trainer trainer(model, c);
    set_random_seed(8);
    NDArray x = model.manager().random_normal({1024, 64});
    data::ArrayDataset d(x, x.get(":, 0:10").argmax(1));
    d.set_batch_size(256).set_shuffle(true, 1);
    trainer.notify_epoch_begin(0);
    for (int epoch = 0; epoch < 3; ++epoch) {
      const memory::Stats before = memory::stats(Device::cpu());
      for (data::Batch& b : d.batches(trainer.manager(), epoch)) run.losses.push_back(trainer.train_batch(b, epoch));
      if (epoch == 2) run.steady_allocations = memory::stats(Device::cpu()).allocations - before.allocations;
    }
    for (const nn::NamedParameter& p : model.parameters()) {
      std::vector<float> w = p.parameter->array().to_vector<float>();
      run.weights.insert(run.weights.end(), w.begin(), w.end());
    }
  }
  gc::poll();
  run.live_arrays_after = debug::snapshot().arrays.size();
  set_num_threads(saved);
  return run;
}

}  // namespace

TEST_CASE("a wide training run with auto-close and a workspace is the same bits at 1, 2, 3 and 7 threads") {
  const std::size_t live_before = debug::snapshot().arrays.size();
  const ThreadsRun one = train(1);
  CHECK(one.losses.back() < one.losses.front());
  CHECK(one.live_arrays_after == live_before);
  for (int threads : {2, 3, 7}) {
    INFO("threads " << threads);
    const ThreadsRun many = train(threads);
    CHECK(many.losses == one.losses);
    CHECK(many.weights == one.weights);
    CHECK(many.steady_allocations == one.steady_allocations);
    CHECK(many.live_arrays_after == live_before);
  }
}

}  // namespace ndgc
