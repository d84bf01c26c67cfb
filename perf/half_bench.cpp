// 16-bit products against float32 (issue 43): ndgc's matmul of two 2048²
// arrays in float32, bfloat16 (AVX512-BF16 where the CPU has it) and float16
// (widened to float32 around the float32 product: F16C copies), at 1 and 2
// threads. GFLOP/s per benchmark; the ratio bf16 / fp32 is the figure.
//
//   build-native/perf/bench_half --benchmark_filter='2048'
#include <benchmark/benchmark.h>

#include <cstdint>

#include <ndgc/ndgc.hpp>

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

}  // namespace

BENCHMARK_MAIN();
