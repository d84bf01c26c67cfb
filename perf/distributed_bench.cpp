// All-reduce bandwidth: ndgc's ProcessGroup::all_reduce against the same
// MPI_Allreduce called directly, on float32 buffers of 1, 16 and 256 MiB.
//
//   mpirun -np 2 --oversubscribe build/perf/bench_distributed
//
// Every rank runs the same fixed iteration counts (Google Benchmark's
// adaptive count would differ between ranks and leave them out of step);
// each iteration is timed from a barrier to the end of the all-reduce on
// that rank (manual time). Rank 0 prints; the others report nothing. ndgc's
// cost over raw MPI: the header all-gather of Note [Header check] and
// polling a non-blocking MPI_Iallreduce instead of a blocking MPI_Allreduce.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <vector>

#include <ndgc/distributed.hpp>
#include <ndgc/ndgc.hpp>

namespace {

using namespace ndgc;

std::int64_t iterations_for(std::int64_t mib) { return mib <= 1 ? 200 : mib <= 16 ? 20 : 4; }

void ndgc_all_reduce(benchmark::State& state) {
  auto pg = distributed::ProcessGroup::from_environment();
  const std::int64_t mib = state.range(0);
  NDManager m = NDManager::new_base_manager("bench");
  NDArray a = m.ones({mib * (1 << 20) / 4});
  for (auto _ : state) {
    pg.barrier();
    const double start = MPI_Wtime();
    pg.all_reduce(a, distributed::ReduceOp::sum);
    state.SetIterationTime(MPI_Wtime() - start);
  }
  state.SetBytesProcessed(state.iterations() * mib * (1 << 20));
}

void mpi_allreduce(benchmark::State& state) {
  distributed::ProcessGroup::from_environment();  // MPI initialised the same way
  const std::int64_t mib = state.range(0);
  std::vector<float> a(std::size_t(mib * (1 << 20) / 4), 1.0f);
  for (auto _ : state) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, a.data(), int(a.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    state.SetIterationTime(MPI_Wtime() - start);
  }
  state.SetBytesProcessed(state.iterations() * mib * (1 << 20));
}

class Silent : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  auto pg = distributed::ProcessGroup::from_environment();
  for (std::int64_t mib : {1, 16, 256}) {
    benchmark::RegisterBenchmark("mpi_allreduce", mpi_allreduce)->Arg(mib)->Iterations(iterations_for(mib))->UseManualTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("ndgc_all_reduce", ndgc_all_reduce)->Arg(mib)->Iterations(iterations_for(mib))->UseManualTime()->Unit(benchmark::kMillisecond);
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
