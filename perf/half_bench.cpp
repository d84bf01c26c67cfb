// 16-bit against float32 (issue 43).
//
// BM_matmul_*: ndgc's matmul of two n² arrays in float32, bfloat16
// (AVX512-BF16 where the CPU has it) and float16 (widened to float32 around
// the float32 product: F16C copies), at 1 and 2 threads. GFLOP/s; the ratio
// bf16 / fp32 is the figure.
//
// BM_step_peak_*: one training step (forward, loss, backward, Adam) of
// ndgc-train's mlp, cnn and lstm at batch 32 with each precision; the counter
// step_peak_bytes is the host's high-water mark during the step above what
// was in use before it (the model, its gradients and Adam's moments
// included in "before"). A count, not a time: it repeats exactly.
//
//   build-native/perf/bench_half --benchmark_filter='2048|step_peak'
#include <benchmark/benchmark.h>

#include <cstdint>

#include <ndgc/model_file.hpp>
#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

namespace {

void product(benchmark::State& state, ndgc::DataType dtype) {
  const std::int64_t n = state.range(0);
  ndgc::set_num_threads(int(state.range(1)));
  ndgc::NDManager m = ndgc::NDManager::new_base_manager("bench-half");
  ndgc::set_random_seed(1);
  const ndgc::NDArray a = m.random_uniform({n, n}, -1, 1).to_type(dtype);
  const ndgc::NDArray b = m.random_uniform({n, n}, -1, 1).to_type(dtype);
  for (auto _ : state) {
    ndgc::NDManager step = m.new_sub_manager("step");
    ndgc::NDArray c = a.matmul(b);
    benchmark::DoNotOptimize(c);
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2e-9 * double(n) * double(n) * double(n), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_matmul_fp32(benchmark::State& s) { product(s, ndgc::DataType::float32); }
void BM_matmul_bf16(benchmark::State& s) { product(s, ndgc::DataType::bfloat16); }
void BM_matmul_fp16(benchmark::State& s) { product(s, ndgc::DataType::float16); }

#define NDGC_HALF_SIZES ->Args({2048, 1})->Args({2048, 2})->Args({512, 1})->Args({512, 2})->UseRealTime()->Unit(benchmark::kMillisecond)
BENCHMARK(BM_matmul_fp32) NDGC_HALF_SIZES;
BENCHMARK(BM_matmul_bf16) NDGC_HALF_SIZES;
BENCHMARK(BM_matmul_fp16) NDGC_HALF_SIZES;

ndgc::Architecture architecture(int which) {
  if (which == 1) return ndgc::Architecture::cnn(784, 10);
  if (which == 2) return ndgc::Architecture::lstm(784, 10);
  return ndgc::Architecture::mlp(784, 10, {128, 64});
}

void step_peak(benchmark::State& state, ndgc::training::Precision precision) {
  ndgc::set_num_threads(1);
  ndgc::set_random_seed(3);
  ndgc::Model model("bench", architecture(int(state.range(0))).make_block());
  model.initialize(ndgc::Shape{32, 784});
  ndgc::training::TrainingConfig config;
  config.loss = std::make_shared<ndgc::nn::SoftmaxCrossEntropyLoss>();
  config.optimizer = std::make_shared<ndgc::nn::Adam>(1e-3);
  config.precision = precision;
  ndgc::training::Trainer trainer(model, config);
  ndgc::NDManager host = ndgc::NDManager::new_base_manager("bench data");
  auto batch = [&] {
    ndgc::data::Batch b{host.new_sub_manager("batch"), {}, {}, 32, 0};
    b.data.push_back(b.manager.random_uniform({32, 784}));
    b.labels.push_back(b.manager.random_uniform({32}, 0, 10).floor().to_type(ndgc::DataType::int64));
    return b;
  };
  trainer.train_batch(batch()).value();  // the optimizer's moments exist from here on
  std::uint64_t peak = 0;
  for (auto _ : state) {
    ndgc::data::Batch b = batch();
    ndgc::memory::reset_peak(ndgc::Device::cpu());
    const std::uint64_t before = ndgc::memory::stats(ndgc::Device::cpu()).current_bytes;
    trainer.train_batch(b).value();
    peak = ndgc::memory::stats(ndgc::Device::cpu()).peak_bytes - before;
  }
  state.counters["step_peak_bytes"] = double(peak);
}

void BM_step_peak_fp32(benchmark::State& s) { step_peak(s, ndgc::training::Precision::float32); }
void BM_step_peak_bf16(benchmark::State& s) { step_peak(s, ndgc::training::Precision::bfloat16); }
void BM_step_peak_fp16(benchmark::State& s) { step_peak(s, ndgc::training::Precision::float16); }
// 0: mlp, 1: cnn, 2: lstm
BENCHMARK(BM_step_peak_fp32)->DenseRange(0, 2)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_step_peak_bf16)->DenseRange(0, 2)->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_step_peak_fp16)->DenseRange(0, 2)->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
