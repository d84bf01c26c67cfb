// Training on a real GPU (issue 14, item 1): the host side that
// tests/training/trainer_device_test.cpp checks on the simulated GPU, here
// with the CUDA engine. A few steps of a small MLP on gpu(0) end near the
// CPU's parameters (cuBLAS and Eigen sum in other orders: a tolerance, not
// bits); gradients cross devices through to_device; device memory is back
// to zero once the model closes; auto-close keeps it flat under DJL's leak.
// Runs only where gpu_main.cpp found a usable device.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "toy_problem.hpp"

using namespace ndgc;

namespace {

data::ArrayDataset toy(const ManagerRef& host) { return test::toy_problem(host, 128); }
training::TrainingConfig config() { return test::toy_config(); }

std::vector<std::vector<float>> train_on(Device device, std::map<std::string, double>& history) {
  NDManager host = NDManager::new_base_manager("host data");
  data::ArrayDataset train = toy(host);
  set_random_seed(21);
  Model model("toy", std::make_unique<nn::Mlp>(8, 3, std::vector<std::int64_t>{16}), device);
  model.initialize(Shape{16, 8});
  training::Trainer trainer(model, config());
  training::fit(trainer, 1, train, &train);
  history = trainer.history().back();
  std::vector<std::vector<float>> out;
  for (const nn::NamedParameter& p : model.parameters()) out.push_back(p.parameter->array().to_vector<float>());
  return out;
}

}  // namespace

TEST_CASE("a model on gpu(0) trains near the CPU's parameters; device memory returns to zero") {
  std::map<std::string, double> cpu_history, gpu_history;
  const auto cpu = train_on(Device::cpu(), cpu_history);
  const std::uint64_t before = memory::stats(Device::gpu(0)).current_bytes;
  const auto gpu = train_on(Device::gpu(0), gpu_history);
  CHECK(memory::stats(Device::gpu(0)).current_bytes == before);
  REQUIRE(gpu.size() == cpu.size());
  for (std::size_t i = 0; i < cpu.size(); ++i)
    for (std::size_t j = 0; j < cpu[i].size(); ++j) CHECK(gpu[i][j] == doctest::Approx(cpu[i][j]).epsilon(1e-3));
  CHECK(gpu_history.at("train_loss") == doctest::Approx(cpu_history.at("train_loss")).epsilon(1e-4));
  CHECK(gpu_history.at("validate_accuracy") == doctest::Approx(cpu_history.at("validate_accuracy")).epsilon(0.05));
}

TEST_CASE("backward through to_device brings the gradient back to the source's device") {
  NDManager host = NDManager::new_base_manager("host");
  NDArray w = host.create(std::vector<float>{1, -2, 3}).set_requires_gradient(true);
  {
    GradientCollector c;
    c.backward(w.to_device(Device::gpu(0)).mul(3.0).square().sum());  // sum (3w)^2
  }
  CHECK(w.gradient().to_vector<float>() == std::vector<float>{18, -36, 54});
}

TEST_CASE("DJL's leak on gpu(0): flat device bytes from step to step with auto-close on") {
  const bool was = gc::enabled();
  gc::enable();
  NDManager host = NDManager::new_base_manager("host data");
  data::ArrayDataset train = toy(host);
  std::vector<std::uint64_t> bytes;
  {
    Model model("leaky", std::make_unique<nn::Mlp>(8, 3, std::vector<std::int64_t>{16}), Device::gpu(0));
    model.initialize(Shape{16, 8});
    training::Trainer trainer(model, config());
    for (int epoch = 0; epoch < 2; ++epoch)
      for (data::Batch& batch : train.batches(trainer.manager(), epoch)) {
        trainer.train_batch(batch);
        for (const NDArray& a : trainer.model().manager().managed_arrays())  // the leak: results join the model
          if (a.requires_gradient()) (void)a.gradient().flatten().matmul(a.gradient().flatten()).item<double>();
        gc::poll();
        bytes.push_back(memory::stats(Device::gpu(0)).current_bytes);
      }
  }
  was ? gc::enable() : gc::disable();
  REQUIRE(bytes.size() == 16);
  for (std::size_t i = 2; i < bytes.size(); ++i) CHECK(bytes[i] == bytes[1]);
}
