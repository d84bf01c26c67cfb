// Trainer, fit() and the listeners on small in-memory datasets: the manager
// tree, zeroing, flat memory over a few hundred steps with auto-close off and
// on, a leaking loop that only auto-close keeps flat, metrics and CSV.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "test_util.hpp"

namespace ndgc {
namespace {

// A learnable problem: class = arg-max of the first 3 of 8 features.
data::ArrayDataset toy(const ManagerRef& m, std::int64_t rows, std::uint64_t seed) {
  set_random_seed(seed);
  NDArray x = m.random_normal({rows, 8});
  NDArray y = x.get(":, 0:3").argmax(1);
  return data::ArrayDataset(x, y);
}

training::TrainingConfig trainer_config(double lr = 1e-2) {
  training::TrainingConfig c;
  c.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
  c.optimizer = std::make_shared<nn::Adam>(lr);
  c.metrics.push_back(std::make_shared<training::Accuracy>());
  return c;
}

std::unique_ptr<nn::Block> trainer_net() { return std::make_unique<nn::Mlp>(8, 3, std::vector<std::int64_t>{16}); }

struct Recorder : training::TrainingListener {
  std::vector<std::string> events;
  void on_training_begin(training::Trainer&) override { events.push_back("begin"); }
  void on_epoch_begin(training::Trainer&, std::int64_t e) override { events.push_back("epoch " + std::to_string(e)); }
  void on_batch_end(training::Trainer&, const training::BatchResult& r) override {
    if (r.index == 0) events.push_back(r.training ? "train batch" : "validate batch");
  }
  void on_epoch_end(training::Trainer&, std::int64_t e) override { events.push_back("end " + std::to_string(e)); }
  void on_training_end(training::Trainer&) override { events.push_back("done"); }
};

}  // namespace

TEST_CASE("the trainer's manager is a child of the model's; batches are children of the trainer's") {
  Model model("toy", trainer_net());
  model.initialize(Shape{16, 8});
  data::ArrayDataset train = toy(model.manager(), 64, 1);
  train.set_batch_size(16);
  training::Trainer trainer(model, trainer_config());
  CHECK(trainer.manager().parent().same(model.manager()));
  for (data::Batch& batch : train.batches(trainer.manager(), 0)) {
    CHECK(batch.manager.parent().same(trainer.manager()));
    const double loss = trainer.train_batch(batch);
    CHECK(loss > 0);
  }
  CHECK(trainer.manager().sub_managers().empty());
}

TEST_CASE("trainer errors") {
  Model model("toy", trainer_net());
  CHECK_THROWS_WITH_AS(training::Trainer(model, trainer_config()), doctest::Contains("is not initialized"), InvalidArgument);
  model.initialize(Shape{1, 8});
  training::TrainingConfig no_loss = trainer_config();
  no_loss.loss = nullptr;
  CHECK_THROWS_WITH_AS(training::Trainer(model, no_loss), doctest::Contains("has no loss"), InvalidArgument);
  training::TrainingConfig no_opt = trainer_config();
  no_opt.optimizer = nullptr;
  CHECK_THROWS_WITH_AS(training::Trainer(model, no_opt), doctest::Contains("has no optimizer"), InvalidArgument);
  training::Trainer trainer(model, trainer_config());
  data::ArrayDataset train = toy(model.manager(), 8, 1);
  CHECK_THROWS_WITH_AS(training::fit(trainer, -1, train), doctest::Contains("epochs must not be negative"),
                       InvalidArgument);
}

TEST_CASE("new_gradient_collector zeroes the parameters' gradients, and only theirs") {
  Model model("toy", trainer_net());
  model.initialize(Shape{1, 8});
  training::Trainer trainer(model, trainer_config());
  NDArray other = model.manager().ones({3}).set_requires_gradient(true);
  other.gradient().fill_(5);
  for (const auto& p : model.parameters()) p.parameter->gradient().fill_(1);
  {
    GradientCollector c = trainer.new_gradient_collector();
    CHECK(autograd::is_recording());
  }
  for (const auto& p : model.parameters()) CHECK(p.parameter->gradient().abs().sum().item<float>() == 0);
  CHECK(other.gradient().sum().item<float>() == 15);
}

TEST_CASE("fit: listeners in order, history, learning") {
  Model model("toy", trainer_net());
  model.initialize(Shape{16, 8});
  data::ArrayDataset train = toy(model.manager(), 512, 1), test = toy(model.manager(), 256, 2);
  train.set_batch_size(16).set_shuffle(true, 5);
  test.set_batch_size(64);
  training::TrainingConfig c = trainer_config();
  auto recorder = std::make_shared<Recorder>();
  auto timing = std::make_shared<training::EpochTimingListener>();
  c.listeners = {recorder, timing};
  training::Trainer trainer(model, c);
  training::fit(trainer, 4, train, &test);
  CHECK(recorder->events.front() == "begin");
  CHECK(recorder->events[1] == "epoch 0");
  CHECK(recorder->events[2] == "train batch");
  CHECK(recorder->events[3] == "validate batch");
  CHECK(recorder->events[4] == "end 0");
  CHECK(recorder->events.back() == "done");
  REQUIRE(trainer.history().size() == 4);
  CHECK(timing->epoch_seconds().size() == 4);
  for (double s : timing->epoch_seconds()) CHECK(s > 0);
  const auto& last = trainer.history().back();
  for (const char* key : {"train_loss", "train_accuracy", "validate_loss", "validate_accuracy"}) CHECK(last.count(key) == 1);
  CHECK(last.at("train_loss") < trainer.history().front().at("train_loss"));
  CHECK(last.at("validate_accuracy") > 0.8);
  std::ostringstream progress;
  training::ProgressListener lines(progress);
  lines.on_epoch_begin(trainer, 3);
  lines.on_epoch_end(trainer, 3);
  CHECK(progress.str().find("validate_accuracy") != std::string::npos);
}

// A few hundred steps; host bytes in use at the end of each epoch, from the
// second on, stay within 1 MiB (they are in fact equal).
TEST_CASE("a correctly written loop keeps memory flat, auto-close off and on") {
  for (bool autoclose : {false, true}) {
    CAPTURE(autoclose);
    test::AutoClose ac(autoclose);
    Model model("toy", trainer_net());
    model.initialize(Shape{16, 8});
    data::ArrayDataset train = toy(model.manager(), 800, 3);
    train.set_batch_size(16).set_shuffle(true, 1);  // 50 steps per epoch
    training::TrainingConfig c = trainer_config();
    auto memory = std::make_shared<training::MemoryListener>();
    c.listeners.push_back(memory);
    training::Trainer trainer(model, c);
    training::fit(trainer, 6, train);  // 300 steps
    const auto& rows = memory->rows();
    REQUIRE(rows.size() == 6);
    for (std::size_t e = 1; e < rows.size(); ++e) {
      CAPTURE(e);
      const auto diff = std::int64_t(rows[e].host_bytes) - std::int64_t(rows[1].host_bytes);
      CHECK(std::abs(diff) <= (1 << 20));
      CHECK(rows[e].host_bytes == rows[1].host_bytes);
      CHECK(rows[e].model_arrays == rows[0].model_arrays);
      CHECK(rows[e].trainer_arrays == 0);
    }
    CHECK(rows[0].host_peak_bytes >= rows[0].host_bytes);
  }
}

// The DJL leak: a block whose first op input is a parameter puts its result
// in the model's manager, one array per step. With auto-close off the model's
// manager grows; with it on, every orphan is closed and memory stays flat.
TEST_CASE("a leaking loop grows without auto-close and stays flat with it") {
  struct Scaled : nn::Block {
    nn::Parameter* scale;
    Scaled() { scale = &add_parameter("scale", nn::Parameter::Kind::weight); }
    NDList forward(const NDList& in) override { return NDList{scale->array().mul(in.head())}; }  // the leak
    Shape output_shape(const Shape& s) const override { return s; }
    std::string describe() const override { return "Scaled"; }

   protected:
    void initialize_self(const ManagerRef& m, const Shape& s, DataType dtype) override {
      scale->initialize(m, Shape{s[s.rank() - 1]}, dtype, nn::ConstantInitializer(1));
    }
  };
  for (bool autoclose : {false, true}) {
    CAPTURE(autoclose);
    test::AutoClose ac(autoclose);
    auto seq = std::make_unique<nn::SequentialBlock>();
    seq->add(std::make_unique<Scaled>()).add(trainer_net());
    Model model("leaky", std::move(seq));
    model.initialize(Shape{16, 8});
    data::ArrayDataset train = toy(model.manager(), 320, 4);
    train.set_batch_size(16);  // 20 steps per epoch
    training::TrainingConfig c = trainer_config();
    auto memory = std::make_shared<training::MemoryListener>();
    c.listeners.push_back(memory);
    training::Trainer trainer(model, c);
    training::fit(trainer, 4, train);
    const auto& rows = memory->rows();
    if (autoclose) {
      CHECK(rows[3].model_arrays == rows[1].model_arrays);
      CHECK(rows[3].host_bytes == rows[1].host_bytes);
      CHECK(rows[3].reclaimed > rows[1].reclaimed);
    } else {
      CHECK(rows[3].model_arrays >= rows[1].model_arrays + 2 * 20);  // every step adds arrays to the model manager
      CHECK(rows[3].host_bytes > rows[1].host_bytes);
    }
  }
}

TEST_CASE("MemoryListener writes one CSV row per epoch") {
  const auto path = std::filesystem::temp_directory_path() / ("ndgc_memory_" + std::to_string(::getpid()) + ".csv");
  Model model("toy", trainer_net());
  model.initialize(Shape{16, 8});
  data::ArrayDataset train = toy(model.manager(), 64, 1);
  train.set_batch_size(16);
  training::TrainingConfig c = trainer_config();
  c.listeners.push_back(std::make_shared<training::MemoryListener>(path));
  training::Trainer trainer(model, c);
  training::fit(trainer, 3, train);
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == training::MemoryListener::csv_header());
  CHECK(lines[1].rfind("0,", 0) == 0);
  CHECK(lines[3].rfind("2,", 0) == 0);
  std::filesystem::remove(path);
  training::TrainingConfig bad = trainer_config();
  bad.listeners.push_back(std::make_shared<training::MemoryListener>("/nonexistent-dir/m.csv"));
  training::Trainer t2(model, bad);
  CHECK_THROWS_WITH_AS(training::fit(t2, 1, train), doctest::Contains("cannot create"), DataError);
}

}  // namespace ndgc
