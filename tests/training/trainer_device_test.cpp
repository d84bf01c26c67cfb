// Training on a device (issue 14, item 1), on the simulated GPU
// (tests/sim_gpu.hpp): a model on gpu(0) trains to the same parameters as
// on the CPU; fit()'s batches are made on the device; a steady-state step
// copies nothing back to the host unless a listener asks (Note [Deferred
// loss]); device memory goes back to zero when the model closes; auto-close
// keeps it flat under DJL's leak, which grows it without auto-close; the
// step workspace lives on the model's device; LossValue's errors.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>


#include <fmt/format.h>

#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "sim_gpu.hpp"
#include "toy_problem.hpp"

namespace ndgc {
namespace {

constexpr std::int64_t kRows = 96, kDeviceBatch = test::kToyBatch, kFeatures = test::kToyFeatures, kDeviceClasses = test::kToyClasses;

// A learnable problem on the host (tests/toy_problem.hpp): 6 batches.
data::ArrayDataset toy(const ManagerRef& host) { return test::toy_problem(host, kRows); }
training::TrainingConfig config() { return test::toy_config(); }

std::unique_ptr<nn::Block> net() { return std::make_unique<nn::Mlp>(kFeatures, kDeviceClasses, std::vector<std::int64_t>{16}); }

// fit() for `epochs` on a fresh toy model on `device`, with these listeners
// (the listener tests read what the listeners kept, after the model closes).
void fit_toy(Device device, std::vector<std::shared_ptr<training::TrainingListener>> listeners,
             const data::ArrayDataset& train, std::int64_t epochs, const data::ArrayDataset* validation = nullptr) {
  Model model("toy", net(), device);
  model.initialize(Shape{kDeviceBatch, kFeatures});
  training::TrainingConfig c = config();
  c.listeners = std::move(listeners);
  training::Trainer trainer(model, c);
  training::fit(trainer, epochs, train, validation);
}

struct Trained {
  std::vector<std::vector<float>> parameters;
  std::vector<std::map<std::string, double>> history;
  std::uint64_t workspace_bytes = 0;  // arena bytes on the model's device at the end
};

// Two epochs of fit() (validated on the training set) for a model on `device`.
Trained train_on(Device device, training::WorkspaceMode mode = training::WorkspaceMode::none) {
  NDManager host = NDManager::new_base_manager("host data");
  data::ArrayDataset train = toy(host);
  set_random_seed(21);
  Model model("toy", net(), device);
  model.initialize(Shape{kDeviceBatch, kFeatures});
  training::TrainingConfig c = config();
  c.workspace_mode = mode;
  training::Trainer trainer(model, c);
  training::fit(trainer, 2, train, &train);
  Trained out;
  for (const nn::NamedParameter& p : model.parameters()) {
    CHECK(p.parameter->array().device() == device);
    CHECK(p.parameter->array().gradient().device() == device);
    out.parameters.push_back(p.parameter->array().to_vector<float>());
  }
  out.history = trainer.history();
  out.workspace_bytes = memory::stats(device).workspace_capacity_bytes;
  return out;
}

void check_same(const Trained& gpu, const Trained& cpu) {
  REQUIRE(gpu.parameters.size() == cpu.parameters.size());
  for (std::size_t i = 0; i < cpu.parameters.size(); ++i) {
    REQUIRE(gpu.parameters[i].size() == cpu.parameters[i].size());
    for (std::size_t j = 0; j < cpu.parameters[i].size(); ++j)
      CHECK(gpu.parameters[i][j] == doctest::Approx(cpu.parameters[i][j]).epsilon(1e-5));
  }
  REQUIRE(gpu.history.size() == cpu.history.size());
  for (std::size_t e = 0; e < cpu.history.size(); ++e)
    for (const auto& entry : cpu.history[e]) {  // CAPTURE captures key: no structured binding
      const auto& key = entry.first;
      const auto& value = entry.second;
      CAPTURE(key);
      CHECK(gpu.history[e].at(key) == doctest::Approx(value).epsilon(1e-6));
    }
}

// Reads each training batch's loss, as a progress listener that prints it would.
struct LossReader : training::TrainingListener {
  std::vector<double> losses;
  void on_batch_end(training::Trainer&, const training::BatchResult& r) override {
    if (r.training) losses.push_back(r.loss);
  }
};

// DJL 0.20's leak, as tools/ndgc_train/leak.cpp writes it: after each step,
// ops whose first input is a parameter or a gradient (so their results join
// the model's manager), read back to the host.
struct ModelLeak : training::TrainingListener {
  void on_batch_end(training::Trainer& trainer, const training::BatchResult& r) override {
    if (!r.training) return;
    double squares = 0;
    for (const NDArray& a : trainer.model().manager().managed_arrays())
      if (a.requires_gradient()) {
        NDArray g = a.gradient();
        squares += g.flatten().matmul(g.flatten()).item<double>();
      }
    norm = std::sqrt(squares);
  }
  double norm = 0;
};

}  // namespace

TEST_CASE("a model on gpu(0) trains to the CPU's parameters and history (same seed)") {
  const Trained cpu = train_on(Device::cpu());
  test::SimGpu gpu;
  const Trained on_gpu = train_on(Device::gpu(0));
  check_same(on_gpu, cpu);
  CHECK(gpu.from_host_calls() > 0);  // the batches went over
  CHECK(gpu.bytes_in_use() == 0);    // and everything came back when the model closed
}

TEST_CASE("with WorkspaceMode::enabled on gpu(0), the step workspace is on the device; the same parameters") {
  const Trained cpu = train_on(Device::cpu());
  test::SimGpu gpu;
  const Trained on_gpu = train_on(Device::gpu(0), training::WorkspaceMode::enabled);
  check_same(on_gpu, cpu);
  CHECK(on_gpu.workspace_bytes > 0);
  CHECK(gpu.bytes_in_use() == 0);
}

TEST_CASE("fit's batches are made on the model's device; the trainer's manager is there too") {
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("host data");
  data::ArrayDataset train = toy(host);
  Model model("toy", net(), Device::gpu(0));
  model.initialize(Shape{kDeviceBatch, kFeatures});
  training::Trainer trainer(model, config());
  CHECK(trainer.device() == Device::gpu(0));
  CHECK(trainer.manager().device() == Device::gpu(0));
  for (int prefetch : {0, 2}) {
    CAPTURE(prefetch);
    train.set_prefetch(prefetch);
    const std::uint64_t from_host = gpu.from_host_calls();
    std::int64_t batches = 0;
    for (data::Batch& batch : train.batches(trainer.manager(), 0)) {
      CHECK(batch.manager.device() == Device::gpu(0));
      CHECK(batch.data.head().device() == Device::gpu(0));
      CHECK(batch.labels.head().device() == Device::gpu(0));
      // The same rows as a batch made on the host.
      const std::vector<std::int64_t> rows = train.epoch_plan(0)[std::size_t(batch.index)];
      data::Batch on_host = train.get_batch(host, rows);
      CHECK(batch.data.head().to_vector<float>() == on_host.data.head().to_vector<float>());
      CHECK(batch.labels.head().to_vector<std::int64_t>() == on_host.labels.head().to_vector<std::int64_t>());
      ++batches;
    }
    CHECK(batches == train.batch_count());
    CHECK(gpu.from_host_calls() - from_host == std::uint64_t(2 * batches));  // features and labels, once each
  }
}

TEST_CASE("a steady-state step on gpu(0) copies nothing back to the host unless a listener reads") {
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("host data");
  data::ArrayDataset train = toy(host);
  Model model("toy", net(), Device::gpu(0));
  model.initialize(Shape{kDeviceBatch, kFeatures});

  SUBCASE("no listener reads: zero to_host per step, the epoch's metrics read once each at its end") {
    training::Trainer trainer(model, config());
    trainer.notify_training_begin();
    trainer.notify_epoch_begin(0);
    int step = 0;
    for (data::Batch& batch : train.batches(trainer.manager(), 0)) {
      if (step == 1) gpu.reset_counts();  // after the first step (the metrics' totals are made there)
      training::LossValue loss = trainer.train_batch(batch);
      CHECK_FALSE(loss.is_read());
      ++step;
    }
    REQUIRE(step == 6);
    CHECK(gpu.to_host_calls() == 0);
    CHECK(gpu.from_host_calls() == 2 * 4);  // features and labels of batches 2..5 (batch 1 was made before the reset)
    trainer.notify_epoch_end(0, false);
    CHECK(gpu.to_host_calls() == 2);  // train_loss and train_accuracy, one read each
    CHECK(trainer.history().back().at("train_accuracy") >= 0);
    CHECK(trainer.history().back().at("train_loss") > 0);
  }
  SUBCASE("a listener that reads each step's loss: one to_host per step, and the value is the loss") {
    training::TrainingConfig c = config();
    auto reader = std::make_shared<LossReader>();
    c.listeners.push_back(reader);
    training::Trainer trainer(model, c);
    trainer.notify_epoch_begin(0);
    int step = 0;
    std::vector<double> returned;
    for (data::Batch& batch : train.batches(trainer.manager(), 0)) {
      if (step == 1) gpu.reset_counts();
      const training::LossValue loss = trainer.train_batch(batch);
      CHECK(loss.is_read());  // the listener read it; the copy handed back remembers
      returned.push_back(loss);
      ++step;
    }
    CHECK(gpu.to_host_calls() == 5);
    CHECK(reader->losses == returned);
  }
  SUBCASE("a caller that keeps train_batch's result as a double reads it, once per step") {
    training::Trainer trainer(model, config());
    trainer.notify_epoch_begin(0);
    int step = 0;
    for (data::Batch& batch : train.batches(trainer.manager(), 0)) {
      if (step == 1) gpu.reset_counts();
      const double loss = trainer.train_batch(batch);
      CHECK(std::isfinite(loss));
      ++step;
    }
    CHECK(gpu.to_host_calls() == 5);
  }
}

TEST_CASE("gpu(0) memory: flat over epochs without a leak, zero once the model closes") {
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("host data");
  data::ArrayDataset train = toy(host);
  {
    Model model("toy", net(), Device::gpu(0));
    model.initialize(Shape{kDeviceBatch, kFeatures});
    training::Trainer trainer(model, config());
    std::vector<std::uint64_t> at_epoch_end;
    for (int epoch = 0; epoch < 4; ++epoch) {
      training::fit(trainer, 1, train, &train);
      at_epoch_end.push_back(gpu.bytes_in_use());
    }
    CHECK(at_epoch_end[0] > 0);
    CHECK(at_epoch_end[1] == at_epoch_end[0]);
    CHECK(at_epoch_end[3] == at_epoch_end[1]);
  }
  CHECK(gpu.bytes_in_use() == 0);
  CHECK(memory::stats(Device::gpu(0)).current_bytes == 0);
}

TEST_CASE("MemoryListener on gpu(0): the GPU's bytes in use, reserved and peak per epoch, also in its CSV") {
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("host data");
  data::ArrayDataset train = toy(host);
  const auto path = std::filesystem::temp_directory_path() / ("ndgc_gpu_memory_" + std::to_string(::getpid()) + ".csv");
  {
    auto memory = std::make_shared<training::MemoryListener>(path);
    fit_toy(Device::gpu(0), {memory}, train, 3);
    REQUIRE(memory->rows().size() == 3);
    for (const training::MemoryListener::Row& r : memory->rows()) {
      CHECK(r.gpu_bytes > 0);
      CHECK(r.gpu_reserved_bytes >= r.gpu_bytes);
      CHECK(r.gpu_peak_bytes >= r.gpu_bytes);
    }
    CHECK(memory->rows()[2].gpu_bytes == memory->rows()[1].gpu_bytes);
    std::ifstream in(path);
    std::string header, first;
    std::getline(in, header);
    std::getline(in, first);
    CHECK(header.ends_with(",gpu_bytes,gpu_reserved_bytes,gpu_peak_bytes"));
    const training::MemoryListener::Row& r0 = memory->rows()[0];
    CHECK(first.ends_with("," + std::to_string(r0.gpu_bytes) + "," + std::to_string(r0.gpu_reserved_bytes) + "," +
                          std::to_string(r0.gpu_peak_bytes)));
  }
  std::filesystem::remove(path);
  // On the CPU the GPU's columns are zero.
  auto memory = std::make_shared<training::MemoryListener>();
  fit_toy(Device::cpu(), {memory}, train, 1);
  CHECK(memory->rows()[0].gpu_bytes == 0);
  CHECK(memory->rows()[0].gpu_peak_bytes == 0);
}

TEST_CASE("MemoryTimelineListener: GPU bytes every N training steps, growing with the leak, in its CSV") {
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("host data");
  data::ArrayDataset train = toy(host);  // 6 batches an epoch
  const auto path = std::filesystem::temp_directory_path() / ("ndgc_timeline_" + std::to_string(::getpid()) + ".csv");
  {
    test::AutoClose off(false);
    auto timeline = std::make_shared<training::MemoryTimelineListener>(2, path);
    fit_toy(Device::gpu(0), {std::make_shared<ModelLeak>(), timeline}, train, 2, &train);  // validation batches are not steps
    const auto& rows = timeline->rows();
    REQUIRE(rows.size() == 6);  // steps 2, 4, ..., 12
    for (std::size_t i = 0; i < rows.size(); ++i) {
      CAPTURE(i);
      CHECK(rows[i].step == std::int64_t(2 * (i + 1)));
      CHECK(rows[i].epoch == (i < 3 ? 0 : 1));
      CHECK(rows[i].gpu_bytes > 0);
      CHECK(rows[i].gpu_reserved_bytes >= rows[i].gpu_bytes);
      if (i > 0) CHECK(rows[i].gpu_bytes > rows[i - 1].gpu_bytes);  // the leak, step by step
    }
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    REQUIRE(lines.size() == 7);
    CHECK(lines[0] == training::MemoryTimelineListener::csv_header());
    const auto& r = rows.back();
    CHECK(lines[6] == fmt::format("{},{},{},{},{}", r.epoch, r.step, r.host_bytes, r.gpu_bytes, r.gpu_reserved_bytes));
  }
  std::filesystem::remove(path);
  // On the CPU the GPU's columns are zero and every step is a row with every_steps 1.
  auto timeline = std::make_shared<training::MemoryTimelineListener>();
  fit_toy(Device::cpu(), {timeline}, train, 1);
  REQUIRE(timeline->rows().size() == 6);
  CHECK(timeline->rows()[0].host_bytes > 0);
  CHECK(timeline->rows()[0].gpu_bytes == 0);
  CHECK(timeline->rows()[0].gpu_reserved_bytes == 0);
}

TEST_CASE("MemoryTimelineListener: every_steps below 1 and an unwritable CSV are errors that say so") {
  CHECK_THROWS_WITH_AS(training::MemoryTimelineListener(0), doctest::Contains("every_steps is 0"), InvalidArgument);
  CHECK_THROWS_WITH_AS(training::MemoryTimelineListener(-3), doctest::Contains("every_steps is -3"), InvalidArgument);
  NDManager host = NDManager::new_base_manager("host data");
  data::ArrayDataset train = toy(host);
  CHECK_THROWS_WITH_AS(
      fit_toy(Device::cpu(), {std::make_shared<training::MemoryTimelineListener>(1, "/nonexistent-dir/timeline.csv")},
              train, 1),
      doctest::Contains("/nonexistent-dir/timeline.csv"), DataError);
}

TEST_CASE("DJL's leak on gpu(0): auto-close keeps device bytes flat from step to step; without it they grow") {
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("host data");
  data::ArrayDataset train = toy(host);
  for (bool autoclose : {true, false}) {
    CAPTURE(autoclose);
    test::AutoClose ac(autoclose);
    Model model("leaky", net(), Device::gpu(0));
    model.initialize(Shape{kDeviceBatch, kFeatures});
    training::TrainingConfig c = config();
    c.listeners.push_back(std::make_shared<ModelLeak>());
    training::Trainer trainer(model, c);
    std::vector<std::uint64_t> bytes;
    trainer.notify_epoch_begin(0);
    for (int epoch = 0; epoch < 3; ++epoch)
      for (data::Batch& batch : train.batches(trainer.manager(), epoch)) {
        trainer.train_batch(batch);
        gc::poll();
        bytes.push_back(gpu.bytes_in_use());
      }
    REQUIRE(bytes.size() == 18);
    if (autoclose) {
      for (std::size_t i = 2; i < bytes.size(); ++i) CHECK(bytes[i] == bytes[1]);
    } else {
      for (std::size_t i = 2; i < bytes.size(); ++i) CHECK(bytes[i] > bytes[i - 1]);
    }
  }
  CHECK(gpu.bytes_in_use() == 0);
}

TEST_CASE("a batch made on the host and given to train_batch by hand is copied to the device, and closes with it") {
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("host data");
  data::ArrayDataset train = toy(host);
  Model model("toy", net(), Device::gpu(0));
  model.initialize(Shape{kDeviceBatch, kFeatures});
  training::Trainer trainer(model, config());
  const std::vector<std::int64_t> rows{0, 1, 2, 3};
  {
    data::Batch warm = train.get_batch(host, rows);
    trainer.train_batch(warm);  // the metrics' totals are made here
    trainer.validate_batch(warm);
  }
  const std::uint64_t before = gpu.bytes_in_use();
  {
    data::Batch batch = train.get_batch(host, rows);
    CHECK(batch.data.head().device() == Device::cpu());
    const std::uint64_t from_host = gpu.from_host_calls();
    const double loss = trainer.validate_batch(batch);
    CHECK(std::isfinite(loss));
    CHECK(gpu.from_host_calls() == from_host + 2);
    CHECK(gpu.bytes_in_use() > before);  // the copies (in the batch's manager) and the step's results
  }
  CHECK(gpu.bytes_in_use() == before);
}

TEST_CASE("LossValue: made from a double it reads nothing; its array read after the batch closed is ArrayClosed") {
  const training::LossValue plain(0.25);
  CHECK(plain.is_read());
  CHECK(double(plain) == 0.25);
  CHECK_FALSE(plain.array().defined());

  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("host data");
  data::ArrayDataset train = toy(host);
  Model model("toy", net(), Device::gpu(0));
  model.initialize(Shape{kDeviceBatch, kFeatures});
  training::Trainer trainer(model, config());
  training::LossValue kept;
  {
    data::Batch batch = train.get_batch(trainer.manager(), std::vector<std::int64_t>{0, 1, 2, 3});
    kept = trainer.train_batch(batch);
    CHECK(kept.array().device() == Device::gpu(0));
  }
  CHECK_THROWS_WITH_AS(kept.value(), doctest::Contains("closed"), ArrayClosed);
}

TEST_CASE("Accuracy on gpu(0) reports a label/prediction mismatch as the host path does") {
  test::SimGpu gpu;
  NDManager g = NDManager::new_base_manager("gpu", Device::gpu(0));
  training::Accuracy accuracy;
  accuracy.set_manager(g);
  NDArray predictions = g.create(std::vector<float>{0.1f, 0.9f, 0.8f, 0.2f}, Shape{2, 2});
  NDArray labels = g.create(std::vector<std::int64_t>{1, 0, 1});
  CHECK_THROWS_WITH_AS(accuracy.accumulate(NDList{labels}, NDList{predictions}, training::LossValue(0.0)),
                       doctest::Contains("Accuracy: 3 labels for 2 predictions"), ShapeMismatch);
  NDArray good = g.create(std::vector<std::int64_t>{1, 1});
  gpu.reset_counts();
  accuracy.accumulate(NDList{good}, NDList{predictions}, training::LossValue(0.0));
  accuracy.accumulate(NDList{good}, NDList{predictions}, training::LossValue(0.0));
  CHECK(gpu.to_host_calls() == 0);
  CHECK(accuracy.value() == 0.5);
  CHECK(accuracy.totals() == std::vector<double>{2, 4});
  accuracy.set_totals({3, 4});  // what a data-parallel sum gives back
  CHECK(accuracy.value() == 0.75);
  accuracy.reset();
  CHECK(std::isnan(accuracy.value()));
  accuracy.accumulate(NDList{good}, NDList{predictions}, training::LossValue(0.0));
  CHECK(accuracy.value() == 0.5);
  int totals = 0;  // zeroed in place by set_totals and reset, never made again
  for (const NDArray& a : g.managed_arrays()) totals += a.name() == "accuracy.total";
  CHECK(totals == 1);
}

}  // namespace ndgc
