// Mixed-precision training (src/training/precision.cpp, trainer.cpp): the
// precision names, GradScaler's loss-scaling rules, skipped steps that leave
// the weights alone, and bfloat16/float16 steps that learn without growing
// the model's manager.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

namespace ndgc {

namespace {

training::TrainingConfig precision_config(training::Precision p) {
  training::TrainingConfig c;
  c.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
  c.optimizer = std::make_shared<nn::Adam>(1e-2);
  c.metrics.push_back(std::make_shared<training::Accuracy>());
  c.precision = p;
  return c;
}

std::vector<std::vector<float>> weights_of(Model& model) {
  std::vector<std::vector<float>> out;
  for (const nn::NamedParameter& p : model.parameters()) out.push_back(p.parameter->array().to_vector<float>());
  return out;
}

// One batch of `rows` 8-feature rows whose class is the arg-max of the first 3, scaled by `scale`.
data::Batch toy_batch(ManagerRef m, std::int64_t rows, double scale, std::uint64_t seed) {
  set_random_seed(seed);
  data::Batch b{m.new_sub_manager("batch"), {}, {}, rows, 0};
  NDArray x = b.manager.random_normal({rows, 8});
  b.labels.push_back(x.get(":, 0:3").argmax(1));
  b.data.push_back(x.mul(scale));
  return b;
}

}  // namespace

TEST_CASE("precision: names round-trip; an unknown name is nullopt") {
  for (training::Precision p : {training::Precision::float32, training::Precision::bfloat16,
                                training::Precision::float16})
    CHECK(training::parse_precision(training::to_string(p)) == p);
  CHECK(training::to_string(training::Precision::bfloat16) == "bf16");
  CHECK(training::autocast_dtype(training::Precision::float16) == DataType::float16);
  CHECK_FALSE(training::parse_precision("fp8").has_value());
  CHECK(training::TrainingConfig{}.precision == training::Precision::float32);
}

TEST_CASE("LossScaler: backs off on overflow, grows after growth_interval clean steps, counts skips") {
  training::LossScaler s({.initial_scale = 1024, .growth = 2, .backoff = 0.5, .growth_interval = 3});
  CHECK(s.scale() == 1024);
  s.update(false);
  CHECK(s.scale() == 512);
  CHECK(s.skipped_steps() == 1);
  s.update(true), s.update(true);
  CHECK(s.scale() == 512);
  s.update(false);  // an overflow restarts the count
  CHECK(s.scale() == 256);
  s.update(true), s.update(true), s.update(true);
  CHECK(s.scale() == 512);
  CHECK(s.skipped_steps() == 2);
  CHECK(s.steps_since_growth() == 0);
  CHECK(training::LossScaler().scale() == 65536.0);
  CHECK_THROWS_WITH_AS(training::LossScaler({.initial_scale = 0}), doctest::Contains("initial_scale"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(training::LossScaler({.backoff = 1.5}), doctest::Contains("backoff"), InvalidArgument);
}

TEST_CASE("LossScaler: unscales the gradients and finds an inf or NaN in any of them") {
  NDManager m = NDManager::new_base_manager("scaler");
  training::LossScaler s({.initial_scale = 4});
  NDArray a = m.full({3}, 8.0), b = m.full({2}, 4.0);
  CHECK(s.unscale_and_update(NDList{a, b}));
  CHECK(a.to_vector<float>() == std::vector<float>{2, 2, 2});
  CHECK(b.to_vector<float>() == std::vector<float>{1, 1});
  const std::size_t arrays = m.array_count();
  NDArray c = m.create(std::vector<float>{1, std::numeric_limits<float>::infinity()});
  CHECK_FALSE(s.unscale_and_update(NDList{a, c}));
  CHECK(s.scale() == 2);
  NDArray d = m.create(std::vector<float>{std::nanf(""), 1});
  CHECK_FALSE(s.unscale_and_update(NDList{d}));
  CHECK(m.array_count() == arrays + 2);  // c and d: the check leaves nothing behind
}

TEST_CASE("float16 training: an overflowing step is skipped with the weights untouched, the scale backs off then "
          "grows") {
  NDManager host = NDManager::new_base_manager("fp16 host");
  set_random_seed(21);
  Model model("fp16", std::make_unique<nn::Mlp>(8, 3, std::vector<std::int64_t>{16}));
  model.initialize(Shape{32, 8});
  training::TrainingConfig config = precision_config(training::Precision::float16);
  config.loss_scaling.growth_interval = 4;
  training::Trainer trainer(model, config);
  REQUIRE(trainer.loss_scaler() != nullptr);
  CHECK(trainer.loss_scaler()->scale() == 65536.0);
  // Inputs of 1e5 overflow float16 (65504) in the first linear layer: inf logits, NaN gradients.
  const auto before = weights_of(model);
  trainer.train_batch(toy_batch(host, 32, 1e5, 3));
  CHECK(weights_of(model) == before);
  CHECK(trainer.loss_scaler()->skipped_steps() == 1);
  CHECK(trainer.loss_scaler()->scale() == 32768.0);
  for (int i = 0; i < 4; ++i) trainer.train_batch(toy_batch(host, 32, 1.0, 100 + std::uint64_t(i)));
  CHECK(weights_of(model) != before);
  CHECK(trainer.loss_scaler()->skipped_steps() == 1);
  CHECK(trainer.loss_scaler()->scale() == 65536.0);  // four clean steps: grown back
}

TEST_CASE("mixed precision: bfloat16 and float16 steps learn the toy problem; the model's manager does not grow") {
  for (training::Precision p : {training::Precision::bfloat16, training::Precision::float16}) {
    CAPTURE(training::to_string(p));
    NDManager host = NDManager::new_base_manager("mixed host");
    set_random_seed(21);
    Model model("mixed", std::make_unique<nn::Mlp>(8, 3, std::vector<std::int64_t>{16}));
    model.initialize(Shape{32, 8});
    training::Trainer trainer(model, precision_config(p));
    CHECK((trainer.loss_scaler() != nullptr) == (p == training::Precision::float16));
    double first = 0, last = 0;
    std::size_t arrays = 0;
    for (int step = 0; step < 150; ++step) {
      const double loss = trainer.train_batch(toy_batch(host, 32, 1.0, 7 + std::uint64_t(step % 20))).value();
      if (step == 0) first = loss;
      if (step == 1) arrays = model.manager().array_count();
      last = loss;
    }
    CHECK(model.manager().array_count() == arrays);
    CHECK(last < 0.5 * first);
    for (const nn::NamedParameter& q : model.parameters()) CHECK(q.parameter->array().dtype() == DataType::float32);
  }
}

TEST_CASE("mixed precision: float16 with cuda_graph is refused, naming the reason") {
  Model model("fp16-graph", std::make_unique<nn::Mlp>(8, 3, std::vector<std::int64_t>{16}));
  model.initialize(Shape{4, 8});
  training::TrainingConfig config = precision_config(training::Precision::float16);
  config.cuda_graph = true;
  CHECK_THROWS_WITH_AS(training::Trainer(model, config), doctest::Contains("float16's loss scaler"), InvalidArgument);
}

}  // namespace ndgc
