// The caching device allocator's hit path (issue 12): an allocate + free pair
// served from the cache, over the host-backed source, against std::malloc +
// std::free of the same size. On a GPU the same pair is compared against
// cudaMalloc + cudaFree (gpu/ adds that figure).
//
//   build-rel/perf/bench_caching_allocator --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Ratios matter, not absolute times: run everything in one process.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "memory/caching_allocator.hpp"
#include "memory/caching_device_allocator.hpp"
#include "memory/host_segment_source.hpp"

using namespace ndgc;
using namespace ndgc::memory;

namespace {

constexpr std::size_t kBudget = std::size_t(1) << 30;

// The policy alone: one mutex, a pool lookup, the allocated map.
void BM_CachedAllocFree(benchmark::State& state) {
  const auto bytes = std::size_t(state.range(0));
  HostSegmentSource src(kBudget);
  CachingAllocator cache(src);
  cache.free(cache.allocate(bytes, 0));  // warm: the segment is cached
  const auto calls = src.calls().total();
  for (auto _ : state) {
    void* p = cache.allocate(bytes, 0);
    benchmark::DoNotOptimize(p);
    cache.free(p);
  }
  if (src.calls().total() != calls) state.SkipWithError("a cache hit called the source");
}
BENCHMARK(BM_CachedAllocFree)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20)->Arg(4 << 20);

// What a GPU array's buffer pays: the DeviceAllocator door (accounting,
// limit) around the policy.
void BM_CachedDeviceAllocFree(benchmark::State& state) {
  const auto bytes = std::size_t(state.range(0));
  CachingDeviceAllocator alloc(Device::gpu(0), std::make_unique<HostSegmentSource>(kBudget));
  alloc.deallocate(alloc.allocate(bytes), bytes);
  for (auto _ : state) {
    void* p = alloc.allocate(bytes);
    benchmark::DoNotOptimize(p);
    alloc.deallocate(p, bytes);
  }
}
BENCHMARK(BM_CachedDeviceAllocFree)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20)->Arg(4 << 20);

void BM_MallocFree(benchmark::State& state) {
  const auto bytes = std::size_t(state.range(0));
  for (auto _ : state) {
    void* p = std::malloc(bytes);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
}
BENCHMARK(BM_MallocFree)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20)->Arg(4 << 20);

// A miss that goes to the source each time (empty_cache between pairs): the
// cost the cache saves, on the host.
void BM_UncachedAllocFree(benchmark::State& state) {
  const auto bytes = std::size_t(state.range(0));
  HostSegmentSource src(kBudget);
  CachingAllocator cache(src);
  for (auto _ : state) {
    void* p = cache.allocate(bytes, 0);
    benchmark::DoNotOptimize(p);
    cache.free(p);
    cache.empty_cache();
  }
}
BENCHMARK(BM_UncachedAllocFree)->Arg(4 << 10)->Arg(4 << 20);

// A hit pair while the cache is over its budget (0 here) in free pieces of
// segments still in use, which cannot go back (Note [A cache budget]): every
// free asks to trim. Arg: how many such segments (2 MiB, half used each).
void BM_AllocFreeOverBudget(benchmark::State& state) {
  HostSegmentSource src(kBudget);
  CachingAllocator cache(src);
  cache.set_max_cached_bytes(0);
  std::vector<void*> kept, freed;
  for (std::int64_t i = 0; i < state.range(0); ++i) {
    kept.push_back(cache.allocate(1 << 20, 0));
    freed.push_back(cache.allocate(1 << 20, 0));
  }
  for (void* p : freed) cache.free(p);
  for (auto _ : state) {
    void* p = cache.allocate(1 << 20, 0);
    benchmark::DoNotOptimize(p);
    cache.free(p);
  }
  for (void* p : kept) cache.free(p);
}
BENCHMARK(BM_AllocFreeOverBudget)->Arg(1)->Arg(64)->Arg(256);

}  // namespace

BENCHMARK_MAIN();
