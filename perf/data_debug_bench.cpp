// Figures that used to be timed assertions in tests (issue 11, item 7): a
// test must not fail because the machine is busy, so the times live here.
//
//   build/perf/bench_data_debug --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// BM_Snapshot / BM_Diff: debug::snapshot() of N arrays and diff of two such
// snapshots (aim: well under 100 ms for 100k arrays, optimised build).
// BM_BatchEpoch: one epoch of batches of 32 over 60000 x 784 float32
// (args: shuffle, prefetch depth).
// BM_ZeroGradients: autograd::zero_gradients of one array whose manager holds
// N other arrays; its time must not grow with N (DJL 0.20's did).
#include <benchmark/benchmark.h>

#include <vector>

#include <ndgc/ndgc.hpp>

using namespace ndgc;

namespace {

void BM_Snapshot(benchmark::State& state) {
  NDManager m = NDManager::new_base_manager("bench-snapshot");
  std::vector<NDArray> keep;
  for (std::int64_t i = 0; i < state.range(0); ++i) keep.push_back(m.zeros({1}));
  for (auto _ : state) benchmark::DoNotOptimize(debug::snapshot());
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Snapshot)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_Diff(benchmark::State& state) {
  NDManager m = NDManager::new_base_manager("bench-diff");
  std::vector<NDArray> keep;
  for (std::int64_t i = 0; i < state.range(0); ++i) keep.push_back(m.zeros({1}));
  debug::Snapshot a = debug::snapshot();
  for (int i = 0; i < 1000; ++i) keep.push_back(m.zeros({1}));
  debug::Snapshot b = debug::snapshot();
  for (auto _ : state) benchmark::DoNotOptimize(debug::diff(a, b));
}
BENCHMARK(BM_Diff)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_BatchEpoch(benchmark::State& state) {
  NDManager m = NDManager::new_base_manager("bench-epoch");
  data::ArrayDataset ds(m.zeros({60000, 784}), m.zeros({60000}, DataType::int64));
  ds.set_batch_size(32);
  ds.set_shuffle(state.range(0) != 0, 1).set_prefetch(int(state.range(1)));
  for (auto _ : state) {
    std::int64_t rows = 0;
    for (data::Batch& b : ds.batches(m, 0)) rows += b.size;
    benchmark::DoNotOptimize(rows);
  }
}
BENCHMARK(BM_BatchEpoch)->Args({0, 0})->Args({0, 2})->Args({1, 0})->Args({1, 2})->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_ZeroGradients(benchmark::State& state) {
  NDManager m = NDManager::new_base_manager("bench-zero");
  NDArray w = m.ones({16}).set_requires_gradient(true);
  for (std::int64_t i = 0; i < state.range(0); ++i) m.zeros({1});
  NDList list{w};
  for (auto _ : state) autograd::zero_gradients(list);
}
BENCHMARK(BM_ZeroGradients)->Arg(0)->Arg(100000);

}  // namespace

BENCHMARK_MAIN();
