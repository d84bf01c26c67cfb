// Drain latency under load (issue 11): how long one small op on this thread
// takes while 0, 1 or 3 other threads orphan arrays as fast as they can, with
// auto-close on. A bounded drain (Note [Bounded drains]) keeps the tail short:
// a call pays for at most one batch of other threads' orphans.
//
//   build-rel/perf/bench_drain
//
// Reports, per configuration, the median, p99 and max latency of the op in
// microseconds (counters p50_us, p99_us, max_us) over kOps timed calls. On a
// 2-core machine the orphaning threads and the timed one share cores, so the
// max includes scheduler preemption: compare configurations from one run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <ndgc/ndgc.hpp>

using namespace ndgc;

namespace {

constexpr int kOps = 20000;

void BM_OpLatencyWhileOthersOrphan(benchmark::State& state) {
  const int others = int(state.range(0));
  gc::enable();
  NDManager m = NDManager::new_base_manager("drain-bench");
  NDArray a = m.ones({8, 8});
  NDArray b = m.ones({8, 8});
  std::atomic<bool> stop{false};
  std::vector<std::thread> producers;
  for (int t = 0; t < others; ++t)
    producers.emplace_back([&] {
      // Batches of orphans at once (a vector of temporaries going out of
      // scope), as a training step's intermediates do.
      std::vector<NDArray> temps;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 256; ++i) temps.push_back(m.zeros({4}));
        temps.clear();
      }
    });
  std::vector<double> us;
  us.reserve(kOps);
  for (auto _ : state) {
    us.clear();
    for (int i = 0; i < kOps; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      NDArray c = a + b;
      benchmark::DoNotOptimize(c);
      auto t1 = std::chrono::steady_clock::now();
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  }
  stop = true;
  for (auto& p : producers) p.join();
  gc::poll();
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[us.size() * 99 / 100];
  state.counters["max_us"] = us.back();
  state.SetLabel(std::to_string(others) + " orphaning thread(s), auto-close on");
  gc::disable();
}
BENCHMARK(BM_OpLatencyWhileOthersOrphan)->Arg(0)->Arg(1)->Arg(3)->Iterations(1)->Unit(benchmark::kMillisecond);

// gc::poll() while others orphan: it closes what was queued before it, then
// returns (it once chased the producers until they stopped).
void BM_PollWhileOthersOrphan(benchmark::State& state) {
  const int others = int(state.range(0));
  gc::enable();
  NDManager m = NDManager::new_base_manager("poll-bench");
  std::atomic<bool> stop{false};
  std::vector<std::thread> producers;
  for (int t = 0; t < others; ++t)
    producers.emplace_back([&] {
      std::vector<NDArray> temps;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 256; ++i) temps.push_back(m.zeros({4}));
        temps.clear();
      }
    });
  std::vector<double> us;
  for (auto _ : state) {
    for (int i = 0; i < 2000; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(gc::poll());
      auto t1 = std::chrono::steady_clock::now();
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  }
  stop = true;
  for (auto& p : producers) p.join();
  gc::poll();
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[us.size() * 99 / 100];
  state.counters["max_us"] = us.back();
  state.SetLabel(std::to_string(others) + " orphaning thread(s)");
  gc::disable();
}
BENCHMARK(BM_PollWhileOthersOrphan)->Arg(1)->Arg(3)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
