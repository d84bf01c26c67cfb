// ONNX forward passes: ndgc running the graph against LibTorch running the
// same model traced by PyTorch (issue 39, item 7). The models come from
//   /usr/bin/python3 tests/onnx/export_models.py --perf DIR
// (resnet18 at 224x224, a TransformerEncoder and a small 3-D CNN, as NAME.onnx and NAME.pt);
// NDGC_ONNX_PERF_DIR names DIR (default /tmp/ndgc-onnx-perf). Arguments:
// batch, threads. ndgc runs with auto-close on, each pass in a manager of its
// own; its counter peak_MiB is the pass's peak host bytes above the input,
// as its allocator counts them. Both sides count rss_MiB: the process's
// resident high-water mark over the passes (the untimed one included) above
// what was resident once the model and the input were loaded, so every
// library's own buffers count (oneDNN's, LibTorch's allocator's). Run one
// benchmark a process for it: what an earlier one left resident is not
// counted again.
//
//   build/perf/bench_onnx --benchmark_filter='ndgc/resnet18/1/1'
//   build/perf/bench_onnx --benchmark_filter='ndgc_forward_gpu'   # with the CUDA engine linked
//   OMP_NUM_THREADS=1 perf/peer_at_best.sh build/perf/bench_onnx --benchmark_filter='torch/resnet18/1/1'
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <ndgc/ndgc.hpp>
#include <ndgc/onnx.hpp>
#if NDGC_HAVE_TORCH
#include <torch/script.h>
#include <torch/torch.h>
#endif

namespace {

std::filesystem::path model_dir() {
  const char* dir = std::getenv("NDGC_ONNX_PERF_DIR");
  return dir ? dir : "/tmp/ndgc-onnx-perf";
}

// A field of /proc/self/status in KiB (VmRSS, VmHWM), 0 where unreadable.
std::int64_t status_kib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string key;
  std::int64_t kib = 0;
  while (status >> key) {
    if (key == field + ":" && status >> kib) return kib;
    status.ignore(1 << 10, '\n');
  }
  return 0;
}

// The resident size in KiB when first called, with the high-water mark
// reset to it then (Linux: writing 5 to /proc/self/clear_refs). Once a
// process: Google Benchmark runs a benchmark's function more than once, and
// what its first run made resident must not hide the growth.
std::int64_t reset_resident_peak() {
  static const std::int64_t base = [] {
    std::ofstream("/proc/self/clear_refs") << "5";
    return status_kib("VmRSS");
  }();
  return base;
}

double resident_growth_mib(std::int64_t base_kib) { return double(status_kib("VmHWM") - base_kib) / 1024.0; }

// One sample's shape of each model.
std::vector<std::int64_t> sample_shape(const std::string& name) {
  if (name == "resnet18") return {3, 224, 224};
  if (name == "volume") return {4, 16, 32, 32};  // a 3-D CNN: 4 channels of 16x32x32
  return {64, 128};  // transformer: 64 tokens of 128 features
}

// NAME's graph on `device`, loaded once a process (Google Benchmark calls a
// benchmark's function more than once), so that a second load's transient
// memory is not taken for the passes'.
ndgc::onnx::Imported& loaded(const std::filesystem::path& file, const std::string& name, ndgc::Device device) {
  static std::map<std::string, ndgc::onnx::Imported> models;  // by name and device
  const std::string key = name + "@" + device.to_string();
  if (!models.count(key)) models.emplace(key, ndgc::onnx::load(file, name, device, {.trainable = false}));
  return models.at(key);
}

// A batch of `batch` samples of NAME's input, in `m` (seeded: the same on every side).
ndgc::NDArray sample_input(const ndgc::ManagerRef& m, const std::string& name, std::int64_t batch) {
  ndgc::Shape shape{batch};
  for (std::int64_t d : sample_shape(name)) shape.push_back(d);
  ndgc::set_random_seed(1);
  return m.random_normal(shape);
}

void ndgc_forward(benchmark::State& state, const std::string& name) {
  using namespace ndgc;
  const auto file = model_dir() / (name + ".onnx");
  if (!std::filesystem::exists(file)) return state.SkipWithError(("missing " + file.string()).c_str());
  set_num_threads(int(state.range(1)));
  onnx::Imported& net = loaded(file, name, Device::cpu());
  gc::enable();
  NDManager data = NDManager::new_base_manager("data");
  NDArray x = sample_input(data, name, state.range(0));
  const std::int64_t resident = reset_resident_peak();
  // One pass untimed, on both sides: at batch 16 a run times one or two
  // passes, and the first pays for what later ones reuse (oneDNN's and
  // LibTorch's generated kernels, first touches of memory).
  {
    NDManager pass = data.new_sub_manager("warm-up");
    benchmark::DoNotOptimize(net.model.block().forward(NDList{x}, false).head().key());
    pass.close();
  }
  std::uint64_t peak = 0;
  for (auto _ : state) {
    memory::reset_peak(Device::cpu());
    const std::uint64_t base = memory::stats(Device::cpu()).current_bytes;
    NDManager pass = data.new_sub_manager("pass");
    NDArray y = net.model.block().forward(NDList{x}, false).head();
    benchmark::DoNotOptimize(y.key());
    pass.close();
    peak = std::max(peak, memory::stats(Device::cpu()).peak_bytes - base);
  }
  gc::disable();
  state.counters["rss_MiB"] = resident_growth_mib(resident);
  state.counters["peak_MiB"] = double(peak) / (1 << 20);
  state.counters["threads"] = num_threads();
}

// The same pass on gpu(0) (built with the CUDA engine; skipped without a
// usable GPU): each pass ends by reading the output's sum back, which waits
// for the device, as perf/torch_onnx_gpu_reference.py's passes do. peak_MiB:
// the pass's peak device bytes above the input, as ndgc's allocator counts
// them (PyTorch's torch.cuda.max_memory_allocated counts the same way).
void ndgc_forward_gpu(benchmark::State& state, const std::string& name) {
  using namespace ndgc;
  const auto file = model_dir() / (name + ".onnx");
  if (gpu_count() == 0) return state.SkipWithError("no usable GPU");
  if (!std::filesystem::exists(file)) return state.SkipWithError(("missing " + file.string()).c_str());
  const Device gpu = Device::gpu(0);
  onnx::Imported& net = loaded(file, name, gpu);
  gc::enable();
  NDManager data = NDManager::new_base_manager("data", gpu);
  NDArray x = sample_input(data, name, state.range(0));
  auto pass = [&] {
    NDManager scope = data.new_sub_manager("pass");
    benchmark::DoNotOptimize(net.model.block().forward(NDList{x}, false).head().sum().item<float>());
    scope.close();
  };
  pass();  // untimed: cuBLAS's handles and workspaces, the allocator's first segments
  std::uint64_t peak = 0;
  for (auto _ : state) {
    memory::reset_peak(gpu);
    const std::uint64_t base = memory::stats(gpu).current_bytes;
    pass();
    peak = std::max(peak, memory::stats(gpu).peak_bytes - base);
  }
  gc::disable();
  state.counters["peak_MiB"] = double(peak) / (1 << 20);
}

#if NDGC_HAVE_TORCH
void torch_forward(benchmark::State& state, const std::string& name) {
  const auto file = model_dir() / (name + ".pt");
  if (!std::filesystem::exists(file)) return state.SkipWithError(("missing " + file.string()).c_str());
  const int saved = torch::get_num_threads();
  torch::set_num_threads(int(state.range(1)));
  static std::map<std::string, torch::jit::Module> loaded;  // once a process, as ndgc's
  if (!loaded.count(name)) loaded.emplace(name, torch::jit::load(file.string()));
  torch::jit::Module& module = loaded.at(name);
  module.eval();
  torch::NoGradGuard no_grad;
  std::vector<std::int64_t> shape{state.range(0)};
  for (std::int64_t d : sample_shape(name)) shape.push_back(d);
  torch::manual_seed(1);
  const torch::Tensor x = torch::randn(shape);
  const std::int64_t resident = reset_resident_peak();
  benchmark::DoNotOptimize(module.forward({x}).toTensor().data_ptr());  // untimed, as for ndgc
  for (auto _ : state) {
    torch::Tensor y = module.forward({x}).toTensor();
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.counters["rss_MiB"] = resident_growth_mib(resident);
  state.counters["threads"] = torch::get_num_threads();
  torch::set_num_threads(saved);
}
#endif

void arguments(benchmark::internal::Benchmark* b) {
  for (std::int64_t batch : {1, 16})
    for (std::int64_t threads : {1, 2}) b->Args({batch, threads});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

void gpu_arguments(benchmark::internal::Benchmark* b) {
  for (std::int64_t batch : {1, 16}) b->Args({batch});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK_CAPTURE(ndgc_forward, resnet18, std::string("resnet18"))->Apply(arguments);
BENCHMARK_CAPTURE(ndgc_forward, transformer, std::string("transformer"))->Apply(arguments);
BENCHMARK_CAPTURE(ndgc_forward, volume, std::string("volume"))->Apply(arguments);
BENCHMARK_CAPTURE(ndgc_forward_gpu, resnet18, std::string("resnet18"))->Apply(gpu_arguments);
BENCHMARK_CAPTURE(ndgc_forward_gpu, transformer, std::string("transformer"))->Apply(gpu_arguments);
BENCHMARK_CAPTURE(ndgc_forward_gpu, volume, std::string("volume"))->Apply(gpu_arguments);
#if NDGC_HAVE_TORCH
BENCHMARK_CAPTURE(torch_forward, resnet18, std::string("resnet18"))->Apply(arguments);
BENCHMARK_CAPTURE(torch_forward, transformer, std::string("transformer"))->Apply(arguments);
BENCHMARK_CAPTURE(torch_forward, volume, std::string("volume"))->Apply(arguments);
#endif
BENCHMARK_MAIN();
