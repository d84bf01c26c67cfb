// Workspaces (issue 13): what one array's storage costs from an initialized
// arena against the ordinary path (the host allocator with its block cache),
// measured the same way: Storage::allocate + release of N buffers per
// iteration, and the same through the public factories (m.empty).
//
//   build/perf/bench_workspace --benchmark_min_time=0.5
//
// Ratios go to perf/RESULTS.md ("Workspaces (issue 13)").
#include <benchmark/benchmark.h>

#include <vector>

#include <ndgc/ndgc.hpp>

#include "core/storage.hpp"

namespace {

using namespace ndgc;
constexpr int kBatch = 64;  // storages per cycle

workspace::Config arena_config() {
  workspace::Config cfg;
  cfg.learning = workspace::Learning::none;
  cfg.initial_size = 64 << 20;
  return cfg;
}

// Storage only: the layer a workspace replaces.
void BM_Storage(benchmark::State& state, bool in_workspace) {
  const std::size_t bytes = std::size_t(state.range(0));
  // As in any program with arrays: the core's hooks, the lease recycler
  // among them, are installed with the system manager.
  (void)NDManager::system();
  std::vector<detail::Storage*> held(kBatch);
  for (auto _ : state) {
    workspace::Scope ws;
    if (in_workspace) ws = workspace::activate(arena_config(), "BENCH");
    for (int i = 0; i < kBatch; ++i) held[std::size_t(i)] = detail::Storage::allocate(Device::cpu(), bytes);
    for (int i = 0; i < kBatch; ++i) held[std::size_t(i)]->release();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  workspace::destroy("BENCH");
}
void BM_StorageOrdinary(benchmark::State& s) { BM_Storage(s, false); }
void BM_StorageWorkspace(benchmark::State& s) { BM_Storage(s, true); }
BENCHMARK(BM_StorageOrdinary)->Arg(256)->Arg(16384)->Arg(1 << 20);
BENCHMARK(BM_StorageWorkspace)->Arg(256)->Arg(16384)->Arg(1 << 20);

// A whole array (registry, key, manager, workspace note) from a factory.
void BM_Array(benchmark::State& state, bool in_workspace) {
  const std::int64_t n = state.range(0);
  NDManager m = NDManager::new_base_manager("bench");
  std::vector<NDArray> held(kBatch);
  for (auto _ : state) {
    {
      workspace::Scope ws;
      if (in_workspace) ws = workspace::activate(arena_config(), "BENCH_ARRAYS");
      NDManager step = m.new_sub_manager("step");
      for (int i = 0; i < kBatch; ++i) held[std::size_t(i)] = step.zeros({n});
      for (NDArray& a : held) a = NDArray();
    }
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  workspace::destroy("BENCH_ARRAYS");
}
void BM_ArrayOrdinary(benchmark::State& s) { BM_Array(s, false); }
void BM_ArrayWorkspace(benchmark::State& s) { BM_Array(s, true); }
BENCHMARK(BM_ArrayOrdinary)->Arg(64)->Arg(4096);
BENCHMARK(BM_ArrayWorkspace)->Arg(64)->Arg(4096);

}  // namespace

BENCHMARK_MAIN();
