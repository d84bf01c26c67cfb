// All-reduce bandwidth: ndgc's ProcessGroup::all_reduce against the same
// MPI_Allreduce called directly, on float32 buffers of 4 KiB and 1, 16 and
// 256 MiB: one call on the whole buffer (what a user would write), and in
// the 16 MiB chunks ndgc uses (Note [Blocking payload] in
// src/distributed/process_group.cpp), which isolates ndgc's own cost; and
// all_reduce_async + wait (the gradient reducer's path).
//
//   mpirun -np 2 --oversubscribe --allow-run-as-root build/perf/bench_distributed
//
// Every rank runs the same fixed iteration counts (Google Benchmark's
// adaptive count would differ between ranks and leave them out of step),
// after one untimed warm-up call (OpenMPI's first call of a size maps its
// scratch memory, which would otherwise be charged to whichever benchmark
// runs first); each iteration is timed from a barrier to the end of the
// all-reduce on that rank (manual time). Rank 0 prints; the others report
// nothing. ndgc's cost over raw MPI: the header all-reduce of Note [Header
// check] (latency, polled).
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <algorithm>
#include <utility>
#include <vector>

#include <ndgc/distributed.hpp>
#include <ndgc/ndgc.hpp>

namespace {

using namespace ndgc;

// Buffer sizes in KiB.
constexpr std::int64_t kSizesKiB[] = {4, 1 << 10, 16 << 10, 256 << 10};
constexpr std::int64_t kChunkFloats = std::int64_t(16) << 20 >> 2;  // ndgc's payload chunk

std::int64_t iterations_for(std::int64_t kib) { return kib <= 4 ? 1000 : kib <= 1024 ? 200 : kib <= 16384 ? 20 : 4; }

template <class Call>
void timed(benchmark::State& state, Call&& call) {
  call();  // warm-up, untimed
  for (auto _ : state) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    call();
    state.SetIterationTime(MPI_Wtime() - start);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * 1024);
}

void ndgc_all_reduce(benchmark::State& state) {
  auto pg = distributed::ProcessGroup::from_environment();
  NDManager m = NDManager::new_base_manager("bench");
  NDArray a = m.ones({state.range(0) * 1024 / 4});
  timed(state, [&] { pg.all_reduce(a, distributed::ReduceOp::sum); });
}

void ndgc_all_reduce_async(benchmark::State& state) {
  auto pg = distributed::ProcessGroup::from_environment();
  NDManager m = NDManager::new_base_manager("bench");
  NDArray a = m.ones({state.range(0) * 1024 / 4});
  timed(state, [&] { pg.all_reduce_async(a, distributed::ReduceOp::sum).wait(); });
}

void mpi_allreduce(benchmark::State& state) {
  distributed::ProcessGroup::from_environment();  // MPI initialised the same way
  std::vector<float> a(std::size_t(state.range(0) * 1024 / 4), 1.0f);
  timed(state, [&] { MPI_Allreduce(MPI_IN_PLACE, a.data(), int(a.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); });
}

void mpi_allreduce_chunked(benchmark::State& state) {
  distributed::ProcessGroup::from_environment();
  std::vector<float> a(std::size_t(state.range(0) * 1024 / 4), 1.0f);
  const std::int64_t n = std::int64_t(a.size());
  timed(state, [&] {
    for (std::int64_t b = 0; b < n; b += kChunkFloats)
      MPI_Allreduce(MPI_IN_PLACE, a.data() + b, int(std::min(kChunkFloats, n - b)), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  });
}

class Silent : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  auto pg = distributed::ProcessGroup::from_environment();
  for (std::int64_t kib : kSizesKiB) {
    for (auto [name, f] : {std::pair{"mpi_allreduce", &mpi_allreduce}, {"mpi_allreduce_chunked", &mpi_allreduce_chunked},
                           {"ndgc_all_reduce", &ndgc_all_reduce}, {"ndgc_all_reduce_async", &ndgc_all_reduce_async}})
      benchmark::RegisterBenchmark(name, f)->Arg(kib)->Iterations(iterations_for(kib))->UseManualTime()->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  if (pg.rank() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    Silent silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  return 0;
}
