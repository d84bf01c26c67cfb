// The cost of one collection of the tracing detector (docs/design.md §7) against
// the number of live handles and the size of the collected heap.
//
//   BM_Collect/<handles>/<heap MiB>: one gc::collect() (a full Boehm
//   collection, then a drain) with <handles> live NDArray handles kept in a
//   std::vector (each with its key on the collected heap) and <heap MiB> of
//   other `new` memory, pointer-free ballast the collector must still mark
//   through (64-byte nodes in a list, the worst case for marking).
//   Counters: heap_MiB (Boehm's heap after setup), handles.
//
//   build-rel/perf/bench_trace (see perf/RESULTS.md)
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include <ndgc/ndgc.hpp>
#include <ndgc/trace.hpp>

namespace {

using namespace ndgc;

struct Ballast {
  Ballast* next = nullptr;
  char payload[56] = {};
};

void BM_Collect(benchmark::State& state) {
  const auto handles = std::size_t(state.range(0));
  const auto ballast_bytes = std::size_t(state.range(1)) << 20;
  gc::enable(gc::Detector::trace);
  gc::set_collect_window(std::chrono::milliseconds(0));  // only the benchmark collects
  {
    NDManager m = NDManager::new_base_manager("bench");
    std::vector<NDArray> kept;
    kept.reserve(handles);
    for (std::size_t i = 0; i < handles; ++i) kept.push_back(m.zeros({1}));
    Ballast* head = nullptr;
    for (std::size_t i = 0; i < ballast_bytes / sizeof(Ballast); ++i) head = new Ballast{head, {}};
    gc::collect();
    for (auto _ : state) benchmark::DoNotOptimize(gc::collect());
    state.counters["heap_MiB"] = double(trace::stats().heap_bytes) / (1 << 20);
    state.counters["handles"] = double(handles);
    while (head) delete std::exchange(head, head->next);
  }
  gc::disable();
}
BENCHMARK(BM_Collect)
    ->ArgsProduct({{1000, 10000, 100000}, {0}})
    ->ArgsProduct({{10000}, {16, 64, 256}})
    ->Unit(benchmark::kMillisecond);

// For scale: create and drop one array (reclaimed by reference counting, no
// collection), with auto-close on (Arg 0) and with the trace detector (Arg 1),
// whose keys and `new` memory go through Boehm's allocator.
void BM_CreateDrop(benchmark::State& state) {
  const bool trace = state.range(0) != 0;
  trace ? gc::enable(gc::Detector::trace) : gc::enable();
  NDManager m = NDManager::new_base_manager("bench");
  for (auto _ : state) {
    NDArray a = m.zeros({1});
    benchmark::DoNotOptimize(a);
  }
  state.SetLabel(trace ? "trace" : "auto-close on");
  gc::disable();
}
BENCHMARK(BM_CreateDrop)->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
