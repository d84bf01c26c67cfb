// A small learnable classification problem for the device training tests
// (tests/training/trainer_device_test.cpp on the simulated GPU,
// tests/gpu/training_test.cpp on a real one): 8 normal features per row, the
// class is the arg-max of the first 3; batches of 16, shuffled; Adam 1e-2
// with softmax cross-entropy and accuracy.
#pragma once

#include <cstdint>
#include <memory>

#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

namespace ndgc::test {

inline constexpr std::int64_t kToyBatch = 16, kToyFeatures = 8, kToyClasses = 3;

inline data::ArrayDataset toy_problem(const ManagerRef& host, std::int64_t rows) {
  set_random_seed(11);
  NDArray x = host.random_normal({rows, kToyFeatures});
  NDArray y = x.get(":, 0:3").argmax(1);
  data::ArrayDataset d(x, y);
  d.set_batch_size(kToyBatch).set_shuffle(true, 5);
  return d;
}

inline training::TrainingConfig toy_config() {
  training::TrainingConfig c;
  c.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
  c.optimizer = std::make_shared<nn::Adam>(1e-2);
  c.metrics.push_back(std::make_shared<training::Accuracy>());
  return c;
}

}  // namespace ndgc::test
