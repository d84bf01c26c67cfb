// Drain latency under load (issue 11): how long one small op on this thread
// takes while 0, 1 or 3 other threads orphan arrays as fast as they can, with
// auto-close on. A bounded drain (Note [Bounded drains]) keeps the tail short:
// a call pays for at most one batch of other threads' orphans.
//
//   build-rel/perf/bench_drain
//
// Reports, per configuration, the median, p99 and max of each call in
// microseconds over kOps timed calls: wall time (p50_us, p99_us, max_us) and
// the calling thread's CPU time (cpu_p50_us, cpu_p99_us, cpu_max_us). On a
// 2-core machine the orphaning threads and the timed one share cores, so wall
// maxima include scheduler preemption; CPU time is what the call itself did
// (its drain included). Compare configurations from one run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <ndgc/ndgc.hpp>

using namespace ndgc;

namespace {

constexpr int kOps = 20000;

double thread_cpu_us() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

// Threads that orphan arrays as fast as they can, in batches of 256 (a vector
// of temporaries going out of scope, as a training step's intermediates do).
class Orphaners {
 public:
  Orphaners(ManagerRef m, int n) {
    for (int t = 0; t < n; ++t)
      threads_.emplace_back([this, m] {
        std::vector<NDArray> temps;
        while (!stop_.load(std::memory_order_relaxed)) {
          for (int i = 0; i < 256; ++i) temps.push_back(m.zeros({4}));
          temps.clear();
          batches_.fetch_add(1, std::memory_order_relaxed);
        }
      });
    // Time nothing until every thread is producing.
    while (batches_.load(std::memory_order_relaxed) < std::uint64_t(4 * n)) std::this_thread::yield();
  }
  ~Orphaners() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> batches_{0};
  std::vector<std::thread> threads_;
};

struct Latencies {
  std::vector<double> wall, cpu;
  template <class F>
  void time(F&& f) {
    double c0 = thread_cpu_us();
    auto t0 = std::chrono::steady_clock::now();
    f();
    auto t1 = std::chrono::steady_clock::now();
    cpu.push_back(thread_cpu_us() - c0);
    wall.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  void report(benchmark::State& state) {
    auto put = [&](std::vector<double>& v, const char* prefix) {
      std::sort(v.begin(), v.end());
      state.counters[std::string(prefix) + "p50_us"] = v[v.size() / 2];
      state.counters[std::string(prefix) + "p99_us"] = v[v.size() * 99 / 100];
      state.counters[std::string(prefix) + "max_us"] = v.back();
    };
    put(wall, "");
    put(cpu, "cpu_");
  }
};

void BM_OpLatencyWhileOthersOrphan(benchmark::State& state) {
  const int others = int(state.range(0));
  gc::enable();
  NDManager m = NDManager::new_base_manager("drain-bench");
  NDArray a = m.ones({8, 8});
  NDArray b = m.ones({8, 8});
  Latencies lat;
  {
    Orphaners producers(m, others);
    for (auto _ : state)
      for (int i = 0; i < kOps; ++i)
        lat.time([&] {
          NDArray c = a + b;
          benchmark::DoNotOptimize(c);
        });
  }
  gc::poll();
  lat.report(state);
  state.SetLabel(std::to_string(others) + " orphaning thread(s), auto-close on");
  gc::disable();
}
BENCHMARK(BM_OpLatencyWhileOthersOrphan)->Arg(0)->Arg(1)->Arg(2)->Arg(4)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
