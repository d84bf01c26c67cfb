// The acceptance run: MLP 784→128→64→10, ReLU, softmax cross
// entropy, Adam (lr 1e-3), batch 32 shuffled with a fixed seed, 3 epochs on
// Fashion-MNIST: test accuracy at least 0.85.
//
// Uses the real data when Debian's dataset-fashion-mnist is installed and
// skips with a message otherwise. Under AddressSanitizer (tens of times
// slower) it trains one epoch on the first 300 batches and asks for 0.75
// (and a mean training loss under 0.9: that epoch starts from scratch).
#include <doctest/doctest.h>

#include <cstdio>

#include <ndgc/data.hpp>
#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "support/sanitizers.hpp"

namespace ndgc {

TEST_CASE("Fashion-MNIST: an MLP reaches 0.85 test accuracy in 3 epochs") {
  if (!data::FashionMnist::available()) {
    MESSAGE("skipped: Fashion-MNIST not found in " << data::FashionMnist::default_directory().string()
                                                   << " (install dataset-fashion-mnist or set NDGC_DATA_DIR)");
    return;
  }
#if NDGC_ASAN
  const std::int64_t epochs = 1, limit = 300;
  const double target = 0.75, max_loss = 0.9;
#else
  const std::int64_t epochs = 3, limit = 0;
  const double target = 0.85, max_loss = 0.6;
#endif
  set_random_seed(20240611);
  Model model("fashion-mlp", std::make_unique<nn::Mlp>(784, 10, std::vector<std::int64_t>{128, 64}));
  model.initialize(Shape{32, 784});
  data::ArrayDataset train = data::FashionMnist::load(model.manager(), data::Split::train);
  data::ArrayDataset test = data::FashionMnist::load(model.manager(), data::Split::test);
  train.set_batch_size(32).set_shuffle(true, 42).set_limit_batches(limit);
  test.set_batch_size(1000);

  training::TrainingConfig config;
  config.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
  config.optimizer = std::make_shared<nn::Adam>(1e-3);
  config.metrics.push_back(std::make_shared<training::Accuracy>());
  auto timing = std::make_shared<training::EpochTimingListener>();
  config.listeners.push_back(timing);
  training::Trainer trainer(model, config);
  training::fit(trainer, epochs, train, &test);

  const auto& last = trainer.history().back();
  for (std::size_t e = 0; e < trainer.history().size(); ++e)
    MESSAGE("epoch " << e << ": " << timing->epoch_seconds()[e] << " s, train loss "
                     << trainer.history()[e].at("train_loss") << ", train accuracy "
                     << trainer.history()[e].at("train_accuracy") << ", test accuracy "
                     << trainer.history()[e].at("validate_accuracy"));
  CHECK(last.at("validate_accuracy") >= target);
  CHECK(last.at("train_loss") < max_loss);
}

}  // namespace ndgc
