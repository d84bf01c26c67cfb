// A small learnable classification problem for the device training tests
// (tests/training/trainer_device_test.cpp on the simulated GPU,
// tests/gpu/training_test.cpp on a real one): 8 normal features per row, the
// class is the arg-max of the first 3; batches of 16, shuffled; Adam 1e-2
// with softmax cross-entropy and accuracy.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

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

// What a run of fit() on the toy problem ends with.
struct ToyRun {
  std::vector<std::vector<float>> parameters;
  std::vector<std::map<std::string, double>> history;
  std::int64_t graph_captures = 0, graph_replays = 0;
};

// The toy problem's network: 16 hidden units, with dropout after them when p > 0.
inline std::unique_ptr<nn::Block> toy_network(double dropout) {
  if (dropout == 0) return std::make_unique<nn::Mlp>(kToyFeatures, kToyClasses, std::vector<std::int64_t>{16});
  auto net = std::make_unique<nn::SequentialBlock>();
  net->add(std::make_unique<nn::Linear>(16)).add(nn::relu_block()).add(std::make_unique<nn::Dropout>(dropout));
  net->add(std::make_unique<nn::Linear>(kToyClasses));
  return net;
}

// `epochs` of fit() on `rows` rows of the toy problem (validated on them),
// for toy_network(dropout) on `device`, seeded alike every time.
inline ToyRun fit_toy_problem(Device device, std::int64_t rows, std::int64_t epochs, training::TrainingConfig config,
                              double dropout = 0) {
  NDManager host = NDManager::new_base_manager("host data");
  data::ArrayDataset data = toy_problem(host, rows);
  set_random_seed(21);
  Model model("toy", toy_network(dropout), device);
  model.initialize(Shape{kToyBatch, kToyFeatures});
  training::Trainer trainer(model, std::move(config));
  training::fit(trainer, epochs, data, &data);
  ToyRun out;
  for (const nn::NamedParameter& p : model.parameters()) out.parameters.push_back(p.parameter->array().to_vector<float>());
  out.history = trainer.history();
  out.graph_captures = trainer.graph_captures();
  out.graph_replays = trainer.graph_replays();
  return out;
}

}  // namespace ndgc::test
