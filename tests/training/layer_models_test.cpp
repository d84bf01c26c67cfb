// Training the models of issue 27's layers with Trainer: training mode
// reaches the blocks (dropout draws, BatchNorm's running statistics move
// while training and not while validating), the running statistics are never
// trained, and a workspace or auto-close computes exactly what plain memory
// does, leaving nothing behind.
#include <doctest/doctest.h>

#include <ndgc/model_file.hpp>
#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "test_util.hpp"

namespace ndgc {
namespace {

constexpr std::int64_t kSide = 8, kBatch = 16, kClasses = 4;
constexpr int kLstmEpochs = 8;

// Eight fixed batches of 8x8 images whose class is the brightest quadrant.
std::vector<data::Batch> image_batches(ManagerRef parent) {
  std::vector<data::Batch> out;
  set_random_seed(17);
  for (std::int64_t i = 0; i < 8; ++i) {
    data::Batch b;
    b.manager = parent.new_sub_manager("batch");
    NDArray x = b.manager.random_normal({kBatch, 2, kSide / 2, 2, kSide / 2});  // [B, qy, y, qx, x]
    NDArray quadrant_means = x.mean({2, 4}).reshape(Shape{kBatch, kClasses});
    b.labels.push_back(quadrant_means.argmax(1));
    b.data.push_back(x.reshape(Shape{kBatch, kSide * kSide}));
    b.size = kBatch;
    b.index = i;
    out.push_back(std::move(b));
  }
  return out;
}

struct Run {
  std::vector<double> losses;
  std::vector<float> parameters;
  // Every running statistic's values after training, then after validating.
  std::vector<float> running_after_training, running_after_validation;
  std::size_t arrays_left = 0;
};

std::vector<float> running_statistics(Model& model) {
  std::vector<float> out;
  for (const nn::NamedParameter& p : model.parameters())
    if (p.parameter->kind() == nn::Parameter::Kind::running) {
      std::vector<float> v = p.parameter->array().to_vector<float>();
      out.insert(out.end(), v.begin(), v.end());
    }
  return out;
}

// `epochs` over the eight batches with Adam 1e-2, then one validation pass.
Run train(const Architecture& arch, int epochs, bool workspace, bool autoclose) {
  test::AutoClose ac(autoclose);
  set_random_seed(5);
  Model model(arch.name, arch.make_block());
  model.initialize(Shape{kBatch, kSide * kSide});
  training::TrainingConfig c;
  c.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
  c.optimizer = std::make_shared<nn::Adam>(1e-2);
  c.workspace_mode = workspace ? training::WorkspaceMode::enabled : training::WorkspaceMode::none;
  Run run;
  {
    training::Trainer trainer(model, c);
    std::vector<data::Batch> data = image_batches(model.manager());
    trainer.notify_epoch_begin(0);
    for (int e = 0; e < epochs; ++e)
      for (const data::Batch& b : data) run.losses.push_back(trainer.train_batch(b, e));
    run.running_after_training = running_statistics(model);
    for (const data::Batch& b : data) trainer.validate_batch(b, epochs);
    run.running_after_validation = running_statistics(model);
  }
  for (const nn::NamedParameter& p : model.parameters()) {
    std::vector<float> w = p.parameter->array().to_vector<float>();
    run.parameters.insert(run.parameters.end(), w.begin(), w.end());
  }
  run.arrays_left = model.manager().array_count();
  return run;
}

// The mean loss of the first and the last three batches.
std::pair<double, double> first_and_last(const Run& run) {
  const std::vector<double>& l = run.losses;
  const std::size_t n = l.size();
  return {(l[0] + l[1] + l[2]) / 3, (l[n - 1] + l[n - 2] + l[n - 3]) / 3};
}

const Architecture kCnn = Architecture::cnn(kSide * kSide, kClasses, {4, 8, 16});
const Architecture kLstm = Architecture::lstm(kSide * kSide, kClasses, 16);  // 8 steps of 8 features

// Each of workspace and auto-close on and off gives `plain`'s bits.
void check_same_in_every_mode(const Architecture& arch, int epochs, const Run& plain) {
  for (bool workspace : {false, true})
    for (bool autoclose : {false, true}) {
      CAPTURE(workspace);
      CAPTURE(autoclose);
      const Run other = train(arch, epochs, workspace, autoclose);
      CHECK(other.losses == plain.losses);
      CHECK(other.parameters == plain.parameters);
      CHECK(other.running_after_training == plain.running_after_training);
      CHECK(other.arrays_left == plain.arrays_left);
    }
}

}  // namespace

TEST_CASE("a CNN trains with Trainer: loss falls, running statistics move in training only, never trained") {
  const Run run = train(kCnn, 4, false, false);
  const auto [first, last] = first_and_last(run);
  CHECK(last < 0.8 * first);
  CHECK(run.running_after_training != std::vector<float>(run.running_after_training.size(), 0.0f));
  CHECK(run.running_after_validation == run.running_after_training);

  Model model("cnn", kCnn.make_block());
  model.initialize(Shape{kBatch, kSide * kSide});
  std::size_t running = 0;
  for (const nn::NamedParameter& p : model.parameters())
    if (p.parameter->kind() == nn::Parameter::Kind::running) {
      ++running;
      CHECK_FALSE(p.parameter->array().requires_gradient());
    }
  CHECK(running == 4);
  CHECK(model.block().trainable_parameters().size() == model.parameters().size() - 4);
}

TEST_CASE("a CNN computes the same bits in a workspace and with auto-close, and leaves only its state") {
  const Run plain = train(kCnn, 2, false, false);
  check_same_in_every_mode(kCnn, 2, plain);
  // 16 parameters (2 convs x 2, 2 BatchNorms x 4, 2 Linears x 2), a gradient for each of the 12 trainable
  // ones and Adam's two moments of each: none for the running statistics.
  CHECK(plain.arrays_left == 16 + 12 + 2 * 12);
}

TEST_CASE("an LSTM trains with Trainer; a workspace and auto-close give the same bits and leave only its state") {
  const Run plain = train(kLstm, kLstmEpochs, false, false);
  const auto [first, last] = first_and_last(plain);
  MESSAGE("LSTM loss: first batches " << first << ", last " << last);
  CHECK(last < 0.8 * first);
  CHECK(plain.arrays_left == 5 * 4);  // 5 parameters, their gradients and Adam's two moments of each
  check_same_in_every_mode(kLstm, kLstmEpochs, plain);
}

}  // namespace ndgc
