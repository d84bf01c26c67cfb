// ONNX forward passes: ndgc running the graph against LibTorch running the
// same model traced by PyTorch (issue 39, item 7). The models come from
//   /usr/bin/python3 tests/onnx/export_models.py --perf DIR
// (resnet18 at 224x224, a TransformerEncoder and a small 3-D CNN, as NAME.onnx and NAME.pt);
// NDGC_ONNX_PERF_DIR names DIR (default /tmp/ndgc-onnx-perf). Arguments:
// batch, threads. ndgc runs with auto-close on, each pass in a manager of its
// own; its counter peak_MiB is the pass's peak host bytes above the input.
//
//   build/perf/bench_onnx --benchmark_filter='ndgc/resnet18/1/1'
//   OMP_NUM_THREADS=1 perf/peer_at_best.sh build/perf/bench_onnx --benchmark_filter='torch/resnet18/1/1'
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
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

// One sample's shape of each model.
std::vector<std::int64_t> sample_shape(const std::string& name) {
  if (name == "resnet18") return {3, 224, 224};
  if (name == "volume") return {4, 16, 32, 32};  // a 3-D CNN: 4 channels of 16x32x32
  return {64, 128};  // transformer: 64 tokens of 128 features
}

void ndgc_forward(benchmark::State& state, const std::string& name) {
  using namespace ndgc;
  const auto file = model_dir() / (name + ".onnx");
  if (!std::filesystem::exists(file)) return state.SkipWithError(("missing " + file.string()).c_str());
  set_num_threads(int(state.range(1)));
  onnx::Imported net = onnx::load(file, name, Device::cpu(), {.trainable = false});
  gc::enable();
  NDManager data = NDManager::new_base_manager("data");
  Shape shape{state.range(0)};
  for (std::int64_t d : sample_shape(name)) shape.push_back(d);
  set_random_seed(1);
  NDArray x = data.random_normal(shape);
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
  state.counters["peak_MiB"] = double(peak) / (1 << 20);
  state.counters["threads"] = num_threads();
}

#if NDGC_HAVE_TORCH
void torch_forward(benchmark::State& state, const std::string& name) {
  const auto file = model_dir() / (name + ".pt");
  if (!std::filesystem::exists(file)) return state.SkipWithError(("missing " + file.string()).c_str());
  const int saved = torch::get_num_threads();
  torch::set_num_threads(int(state.range(1)));
  torch::jit::Module module = torch::jit::load(file.string());
  module.eval();
  torch::NoGradGuard no_grad;
  std::vector<std::int64_t> shape{state.range(0)};
  for (std::int64_t d : sample_shape(name)) shape.push_back(d);
  torch::manual_seed(1);
  const torch::Tensor x = torch::randn(shape);
  benchmark::DoNotOptimize(module.forward({x}).toTensor().data_ptr());  // untimed, as for ndgc
  for (auto _ : state) {
    torch::Tensor y = module.forward({x}).toTensor();
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.counters["threads"] = torch::get_num_threads();
  torch::set_num_threads(saved);
}
#endif

void arguments(benchmark::internal::Benchmark* b) {
  for (std::int64_t batch : {1, 16})
    for (std::int64_t threads : {1, 2}) b->Args({batch, threads});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK_CAPTURE(ndgc_forward, resnet18, std::string("resnet18"))->Apply(arguments);
BENCHMARK_CAPTURE(ndgc_forward, transformer, std::string("transformer"))->Apply(arguments);
BENCHMARK_CAPTURE(ndgc_forward, volume, std::string("volume"))->Apply(arguments);
#if NDGC_HAVE_TORCH
BENCHMARK_CAPTURE(torch_forward, resnet18, std::string("resnet18"))->Apply(arguments);
BENCHMARK_CAPTURE(torch_forward, transformer, std::string("transformer"))->Apply(arguments);
BENCHMARK_CAPTURE(torch_forward, volume, std::string("volume"))->Apply(arguments);
#endif
BENCHMARK_MAIN();
