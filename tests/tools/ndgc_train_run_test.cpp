// ndgc-train's run (tools/ndgc_train/run.cpp) in-process, on the simulated
// GPU (tests/sim_gpu.hpp) and a small Fashion-MNIST-shaped data set written
// by the test (small_fashion_mnist.hpp: so it runs in every CI run): --device gpu:0 trains as the CPU does
// and records the GPU's memory per epoch; --leak model grows it with
// auto-close off and not with it on; under --gpu-limit the leaking run dies
// of OutOfMemory, which the result records (epoch, phase, step, first line)
// while the run returns normally and gives its memory back, and the
// auto-close run under the same limit finishes (Note [A run that dies]).
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <ndgc/model_file.hpp>

#include "leak_run.hpp"
#include "ndgc_train/report.hpp"
#include "sim_gpu.hpp"

namespace ndgc::train_tool {
namespace {

namespace fs = std::filesystem;

Options options(const SmallData& data, Device device, AutoClose autoclose, std::int64_t epochs = 3) {
  return leak_options(data, device, autoclose, epochs);
}

RunResult run(const Options& o) { return run_in_process(o); }

}  // namespace

TEST_CASE("--precision bf16 and fp16: the run learns as float32 does, and says which precision it ran") {
  SmallData data;
  Options o = options(data, Device::cpu(), AutoClose::on, 2);
  o.leak = Leak::none;
  const RunResult single = run(o);
  for (training::Precision p : {training::Precision::bfloat16, training::Precision::float16}) {
    CAPTURE(training::to_string(p));
    o.precision = p;
    const RunResult mixed = run(o);
    CHECK(mixed.precision == training::to_string(p));
    CHECK(mixed.loss_scaling.has_value() == (p == training::Precision::float16));
    REQUIRE(mixed.epochs.size() == 2);
    CHECK_FALSE(mixed.failure);
    CHECK(mixed.epochs.back().test_accuracy > 0.5);
    CHECK(std::abs(mixed.epochs.back().test_accuracy - single.epochs.back().test_accuracy) < 0.1);
  }
}

TEST_CASE("--device gpu:0: the same training as on the CPU, with the GPU's memory per epoch") {
  SmallData data;
  const RunResult cpu = run(options(data, Device::cpu(), AutoClose::on));
  test::SimGpu gpu;
  const RunResult on_gpu = run(options(data, Device::gpu(0), AutoClose::on));
  CHECK(on_gpu.device == "gpu:0");
  CHECK(cpu.device == "cpu");
  CHECK_FALSE(on_gpu.failure);
  REQUIRE(on_gpu.epochs.size() == 3);
  REQUIRE(cpu.epochs.size() == 3);
  for (std::size_t e = 0; e < 3; ++e) {
    CAPTURE(e);
    CHECK(on_gpu.epochs[e].test_accuracy == cpu.epochs[e].test_accuracy);
    CHECK(on_gpu.epochs[e].train_loss == doctest::Approx(cpu.epochs[e].train_loss).epsilon(1e-6));
    CHECK(on_gpu.epochs[e].gpu_allocated_bytes > 400 * 1024);  // 109k parameters, their gradients and moments
    CHECK(on_gpu.epochs[e].gpu_reserved_bytes >= on_gpu.epochs[e].gpu_allocated_bytes);
    CHECK(on_gpu.epochs[e].gpu_peak_bytes >= on_gpu.epochs[e].gpu_allocated_bytes);
    CHECK(cpu.epochs[e].gpu_allocated_bytes == 0);
  }
  CHECK(on_gpu.epochs.back().test_accuracy > 0.5);  // it learned
  // Auto-close on: flat on the device, to the byte.
  CHECK(on_gpu.epochs[2].gpu_allocated_bytes == on_gpu.epochs[1].gpu_allocated_bytes);
  // The model lived on the device: the host holds less than on the CPU run.
  CHECK(on_gpu.epochs[2].bytes_in_use < cpu.epochs[2].bytes_in_use);
  CHECK(gpu.bytes_in_use() == 0);  // everything went back when the run's model closed
}

TEST_CASE("--gpu-limit: the leaking run dies of OutOfMemory and says where; auto-close on finishes under it") {
  SmallData data;
  test::SimGpu gpu;
  // Sizes first, without a limit: the auto-close run's peak, and what the
  // leak adds per epoch with auto-close off.
  const RunResult on = run(options(data, Device::gpu(0), AutoClose::on));
  const RunResult off = run(options(data, Device::gpu(0), AutoClose::off));
  REQUIRE(on.epochs.size() == 3);
  REQUIRE(off.epochs.size() == 3);
  std::uint64_t peak = 0;
  for (const EpochRow& e : on.epochs) peak = std::max(peak, e.gpu_peak_bytes);
  const std::uint64_t growth = off.epochs[2].gpu_allocated_bytes - off.epochs[1].gpu_allocated_bytes;
  REQUIRE(growth > 0);
  CHECK(off.epochs[1].gpu_allocated_bytes - off.epochs[0].gpu_allocated_bytes == growth);
  CHECK(off.growth);  // and the leak report names the sites

  // Room for the auto-close run and one and a half epochs of the leak.
  const std::uint64_t limit = peak + growth + growth / 2;
  Options limited = options(data, Device::gpu(0), AutoClose::off, 4);
  limited.gpu_limit = limit;
  const RunResult died = run(limited);
  REQUIRE(died.failure);
  CHECK(died.failure->error == "OutOfMemory");
  CHECK(died.failure->epoch >= 2);
  CHECK(died.failure->epoch <= 3);
  CHECK(died.epochs.size() == std::size_t(died.failure->epoch - 1));  // the epochs it finished
  CHECK((died.failure->phase == "training" || died.failure->phase == "test"));
  CHECK(died.failure->step >= 1);
  CHECK(died.failure->step <= died.failure->steps);
  CHECK(died.failure->steps == (died.failure->phase == "training" ? 16 : 4));
  CHECK(died.failure->message.find("gpu(0)") != std::string::npos);
  CHECK(died.failure->message.find('\n') == std::string::npos);
  CHECK(memory::stats(Device::gpu(0)).oom_count >= 1);
  CHECK(gpu.bytes_in_use() == 0);  // the dead run's model closed and gave everything back
  // Its leak report covers the time until it died, naming the leak's lines.
  const std::string report = format_report({died});
  CAPTURE(report);
  CHECK(report.find("died of OutOfMemory in epoch") != std::string::npos);
  CHECK(report.find("to when it died (OutOfMemory in epoch") != std::string::npos);
  CHECK(report.find("tools/ndgc_train/leak.cpp") != std::string::npos);

  Options survives = options(data, Device::gpu(0), AutoClose::on, 4);
  survives.gpu_limit = limit;
  const RunResult finished = run(survives);
  CHECK_FALSE(finished.failure);
  CHECK(finished.epochs.size() == 4);
  CHECK(finished.epochs.back().gpu_allocated_bytes == on.epochs.back().gpu_allocated_bytes);
  CHECK(gpu.bytes_in_use() == 0);
}

TEST_CASE("run_training refuses a device this process cannot use, naming it") {
  SmallData data;
  // No SimGpu: gpu(0) is not available in this test binary.
  CHECK_THROWS_WITH_AS(run(options(data, Device::gpu(0), AutoClose::off)),
                       doctest::Contains("ndgc-train --device gpu:0: gpu(0) is not available"), InvalidArgument);
}

TEST_CASE("--memory-every 4 on gpu:0: run-<config>-memory.csv has host and GPU bytes every 4 steps; growing with the leak") {
  SmallData data;
  test::SimGpu gpu;
  Options o = options(data, Device::gpu(0), AutoClose::off, 2);
  o.memory_every = 4;
  fs::create_directories(o.out);
  const RunResult r = run(o);
  REQUIRE_FALSE(r.failure);
  std::ifstream in(o.out / "run-off-memory.csv");
  REQUIRE(in);
  std::string line;
  std::getline(in, line);
  CHECK(line == "epoch,step,host_bytes,gpu_bytes,gpu_reserved_bytes");
  std::vector<std::vector<std::uint64_t>> rows;
  while (std::getline(in, line)) {
    std::vector<std::uint64_t> row;
    std::stringstream fields(line);
    for (std::string f; std::getline(fields, f, ',');) row.push_back(std::stoull(f));
    REQUIRE(row.size() == 5);
    rows.push_back(row);
  }
  REQUIRE(rows.size() == 8);  // 2 epochs of 16 steps, every 4th
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(i);
    CHECK(rows[i][0] == (i < 4 ? 0u : 1u));
    CHECK(rows[i][1] == 4 * (i + 1));
    CHECK(rows[i][3] > 0);
    CHECK(rows[i][4] >= rows[i][3]);
    if (i > 0) CHECK(rows[i][3] > rows[i - 1][3]);  // the leak (auto-close off), step by step
  }
}

}  // namespace ndgc::train_tool

namespace ndgc::train_tool {

TEST_CASE("--save FILE: the trained model in a model file that rebuilds it alone; --compare passes it to the off run") {
  SmallData data;
  Options o = options(data, Device::cpu(), AutoClose::on, 1);
  o.save = fs::temp_directory_path() / ("ndgc_train_save_" + std::to_string(::getpid()) + ".model");
  const RunResult r = run(o);
  CHECK_FALSE(r.failure);
  const Architecture arch = read_architecture(o.save);
  CHECK(arch.name == "mlp");
  CHECK(arch.inputs == 784);
  CHECK(arch.outputs == 10);
  CHECK(arch.hidden == std::vector<std::int64_t>{128, 64});
  {
    LoadedModel loaded = load_model_file(o.save, "fashion");
    CHECK(loaded.model.parameters().size() == 6);
  }
  fs::remove(o.save);

  Options c = o;
  c.compare = true;
  const std::vector<std::string> off = child_arguments(c, AutoClose::off);
  CHECK(std::find(off.begin(), off.end(), "--save") != off.end());
  const std::vector<std::string> on = child_arguments(c, AutoClose::on);
  CHECK(std::find(on.begin(), on.end(), "--save") == on.end());
}

TEST_CASE("--model cnn: it learns, --leak model grows with auto-close off and not on, --save rebuilds it") {
  SmallData data;
  Options o = options(data, Device::cpu(), AutoClose::off, 2);
  o.model = "cnn";
  const RunResult off = run(o);
  REQUIRE_FALSE(off.failure);
  REQUIRE(off.epochs.size() == 2);
  CHECK(off.model == "cnn");
  CHECK(off.epochs.back().test_accuracy > 0.5);  // ten classes: chance is 0.1
  CHECK(off.epochs[1].live_arrays > off.epochs[0].live_arrays);  // the leak's arrays pile up

  o.autoclose = AutoClose::on;
  o.save = fs::temp_directory_path() / ("ndgc_train_cnn_" + std::to_string(::getpid()) + ".model");
  const RunResult on = run(o);
  REQUIRE_FALSE(on.failure);
  CHECK(on.epochs[1].live_arrays == on.epochs[0].live_arrays);
  CHECK(on.epochs.back().test_accuracy == off.epochs.back().test_accuracy);  // the same training, seed for seed
  const Architecture arch = read_architecture(o.save);
  CHECK(arch.name == "cnn");
  CHECK(arch.hidden == std::vector<std::int64_t>{32, 64, 128});
  {
    LoadedModel loaded = load_model_file(o.save, "fashion");
    CHECK(loaded.model.parameters().size() == 16);  // running statistics included
  }
  fs::remove(o.save);
}

TEST_CASE("--model lstm: it learns (8 epochs of 16 steps), and --leak model grows with auto-close off and not on") {
  SmallData data;
  Options o = options(data, Device::cpu(), AutoClose::off, 8);
  o.model = "lstm";
  const RunResult off = run(o);
  REQUIRE_FALSE(off.failure);
  REQUIRE(off.epochs.size() == 8);
  CHECK(off.model == "lstm");
  MESSAGE("lstm: train loss " << off.epochs[0].train_loss << " -> " << off.epochs[7].train_loss << ", accuracy "
                              << off.epochs[7].test_accuracy);
  CHECK(off.epochs[7].train_loss < 0.5 * off.epochs[0].train_loss);
  CHECK(off.epochs[7].test_accuracy > 0.5);  // ten classes: chance is 0.1
  CHECK(off.epochs[1].live_arrays > off.epochs[0].live_arrays);
  o.autoclose = AutoClose::on;
  const RunResult on = run(o);
  REQUIRE_FALSE(on.failure);
  CHECK(on.epochs[7].live_arrays == on.epochs[0].live_arrays);
  CHECK(on.epochs.back().test_accuracy == off.epochs.back().test_accuracy);
}

}  // namespace ndgc::train_tool
