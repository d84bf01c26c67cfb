// Core benchmarks (issue 2): what a handle adds to a call, how fast
// auto-close reclaims, and a small op end to end against LibTorch.
//
//   build/perf/bench_core --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Ratios matter, not absolute times: run everything in one process, side by side.
#include <benchmark/benchmark.h>

#include <vector>

#include <ndgc/ndgc.hpp>

#include "core/array_impl.hpp"
#include "core/registry.hpp"

#if NDGC_HAVE_TORCH
#include <torch/torch.h>
#endif

using namespace ndgc;

namespace {

// The same call, straight on the implementation: the floor a handle adds to.
void BM_ImplSize(benchmark::State& state) {
  gc::disable();
  NDManager m = NDManager::new_base_manager("bench");
  NDArray a = m.zeros({8, 8});
  ndgc::detail::Pinned pin(a, "bench");  // resolved once, outside the loop
  const ndgc::detail::ArrayImpl* impl = pin.get();
  for (auto _ : state) {
    benchmark::DoNotOptimize(impl);
    benchmark::DoNotOptimize(impl->size());
  }
}
BENCHMARK(BM_ImplSize);

// A handle method: drain check, resolve (slot + generation), pin, unpin.
void BM_HandleSize(benchmark::State& state) {
  state.range(0) ? gc::enable() : gc::disable();
  NDManager m = NDManager::new_base_manager("bench");
  NDArray a = m.zeros({8, 8});
  for (auto _ : state) {
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(a.size());
  }
  state.SetLabel(state.range(0) ? "auto-close on, empty queue" : "auto-close off");
  gc::disable();
}
BENCHMARK(BM_HandleSize)->Arg(0)->Arg(1);

// Copying and dropping a handle: one relaxed increment, one acq_rel decrement.
void BM_HandleCopy(benchmark::State& state) {
  NDManager m = NDManager::new_base_manager("bench");
  NDArray a = m.zeros({1});
  for (auto _ : state) {
    NDArray b = a;
    benchmark::DoNotOptimize(b);
  }
}
BENCHMARK(BM_HandleCopy);

// Orphans closed per second by a drain: the queue is filled outside the timer.
void BM_Reclaim(benchmark::State& state) {
  gc::enable();
  NDManager m = NDManager::new_base_manager("bench");
  const std::int64_t batch = state.range(0);
  std::vector<NDArray> arrays;
  arrays.reserve(std::size_t(batch));
  for (auto _ : state) {
    state.PauseTiming();
    for (std::int64_t i = 0; i < batch; ++i) arrays.push_back(m.zeros({4}));
    arrays.clear();  // every key is queued; nothing has drained yet
    state.ResumeTiming();
    benchmark::DoNotOptimize(gc::poll());
  }
  state.SetItemsProcessed(state.iterations() * batch);
  gc::disable();
}
BENCHMARK(BM_Reclaim)->Arg(10000);

// Closing the same orphans by closing their manager (auto-close off): the DJL way.
void BM_ManagerClose(benchmark::State& state) {
  gc::disable();
  const std::int64_t batch = state.range(0);
  for (auto _ : state) {
    state.PauseTiming();
    NDManager m = NDManager::new_base_manager("bench");
    for (std::int64_t i = 0; i < batch; ++i) NDArray t = m.zeros({4});
    state.ResumeTiming();
    m.close();
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_ManagerClose)->Arg(10000);

// 64×64 float32 add, end to end: allocate the result, compute, free it.
// Auto-close on: the result's handle dies and the next call reclaims it, as
// LibTorch frees its tensor. Off: closed by hand, as a careful DJL user would.
void BM_Add64_ndgc(benchmark::State& state) {
  const bool on = state.range(0) != 0;
  on ? gc::enable() : gc::disable();
  NDManager m = NDManager::new_base_manager("bench");
  NDArray a = m.random_uniform({64, 64}), b = m.random_uniform({64, 64});
  for (auto _ : state) {
    NDArray c = a.add(b);
    benchmark::DoNotOptimize(c);
    if (!on) c.close();
  }
  state.SetLabel(on ? "auto-close on" : "auto-close off, close()");
  gc::disable();
}
BENCHMARK(BM_Add64_ndgc)->Arg(0)->Arg(1);

#if NDGC_HAVE_TORCH
void BM_Add64_torch(benchmark::State& state) {
  torch::Tensor a = torch::rand({64, 64}), b = torch::rand({64, 64});
  for (auto _ : state) {
    torch::Tensor c = a + b;
    benchmark::DoNotOptimize(c.data_ptr());
  }
}
BENCHMARK(BM_Add64_torch);
#endif

}  // namespace

BENCHMARK_MAIN();
