// ndgc-train's run (tools/ndgc_train/run.cpp) in-process, on the simulated
// GPU (tests/sim_gpu.hpp) and a small Fashion-MNIST-shaped data set written
// here (so it runs in every CI run): --device gpu:0 trains as the CPU does
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

#include "ndgc_train/options.hpp"
#include "ndgc_train/report.hpp"
#include "ndgc_train/run.hpp"
#include "sim_gpu.hpp"

namespace ndgc::train_tool {
namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kTrainRows = 256, kTestRows = 64;

void put_u32(std::ofstream& out, std::uint32_t v) {
  const unsigned char b[4] = {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
                              static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
  out.write(reinterpret_cast<const char*>(b), 4);
}

// Images whose brightest 28-pixel row is the label's, and their labels, as
// unpacked IDX files: learnable, so accuracy says the model trained.
void write_split(const fs::path& dir, const std::string& prefix, std::uint32_t rows, std::uint32_t seed) {
  std::ofstream images(dir / (prefix + "-images-idx3-ubyte"), std::ios::binary);
  std::ofstream labels(dir / (prefix + "-labels-idx1-ubyte"), std::ios::binary);
  put_u32(images, 0x00000803);
  put_u32(images, rows);
  put_u32(images, 28);
  put_u32(images, 28);
  put_u32(labels, 0x00000801);
  put_u32(labels, rows);
  std::uint32_t state = seed;
  for (std::uint32_t i = 0; i < rows; ++i) {
    const unsigned char label = static_cast<unsigned char>(i % 10);
    labels.put(static_cast<char>(label));
    for (int p = 0; p < 784; ++p) {
      state = state * 1664525u + 1013904223u;
      const unsigned char noise = static_cast<unsigned char>(state >> 26);  // 0..63
      images.put(static_cast<char>(p / 28 == 2 * label ? 200 + noise / 2 : noise));
    }
  }
}

struct SmallData {
  fs::path dir = fs::temp_directory_path() / ("ndgc-train-run-test-" + std::to_string(::getpid()));
  SmallData() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    write_split(dir, "train", kTrainRows, 1);
    write_split(dir, "t10k", kTestRows, 2);
  }
  ~SmallData() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

Options options(const SmallData& data, Device device, AutoClose autoclose, std::int64_t epochs = 3) {
  Options o;
  o.epochs = epochs;
  o.batch_size = 16;  // 16 training and 4 test batches per epoch
  o.seed = 7;
  o.autoclose = autoclose;
  o.leak = Leak::model;
  o.data_dir = data.dir;
  o.out = data.dir / "out";
  o.device = device;
  return o;
}

RunResult run(const Options& o) {
  test::AutoClose restore(false);  // run_training sets the switch; put it back afterwards
  std::ostringstream progress;
  RunResult r = run_training(o, progress, false);
  gc::poll();
  return r;
}

}  // namespace

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

}  // namespace ndgc::train_tool
