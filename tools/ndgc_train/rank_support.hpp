// ndgc-train under `mpirun -np N` (data-parallel, docs/distributed.md), when this
// program links ndgc::distributed; stubs otherwise (a job of one rank), so
// the rest of ndgc-train needs no #if.
//
// Every rank runs the same run: the same options, the same seed, rank 0's
// parameters broadcast, each epoch's batches (training and test) sharded
// across ranks (--batch-size is per rank: N ranks × B rows per step), the
// gradients averaged in 25 MiB buckets, the metrics summed over ranks. Rank 0
// prints and writes; the others write nothing. The RankGatherer collects each
// rank's figures at every epoch's end and each rank's leak diff at the end
// (collectives: every rank runs the same listeners in the same order).
#pragma once

#include <memory>
#include <optional>

#include <ndgc/data.hpp>
#include <ndgc/training.hpp>

#include "ranks.hpp"
#include "recorder.hpp"

namespace ndgc::train_tool {

struct JobRanks {
  int rank = 0;
  int size = 1;
  bool distributed = false;  // started by mpirun and ndgc::distributed linked
};

bool distributed_linked() noexcept;
// OMPI_COMM_WORLD_SIZE (OpenMPI), PMI_SIZE (MPICH's Hydra) or PMIX_RANK set.
bool launched_by_mpirun() noexcept;
// The first call initialises MPI when launched by mpirun (and linked).
// InvalidArgument when launched by mpirun in a build without ndgc::distributed.
JobRanks job_ranks();

// Data-parallel: each dataset's shard of every epoch, and the trainer's reducer.
void shard_for_job(data::ArrayDataset& train, data::ArrayDataset& test);
void add_gradient_reducer(training::TrainingConfig& config);

// Put right after the EpochRecorder, whose row of each epoch it gathers.
class RankGatherer : public training::TrainingListener {
 public:
  explicit RankGatherer(std::shared_ptr<const EpochRecorder> recorder) : recorder_(std::move(recorder)) {}
  void on_epoch_begin(training::Trainer&, std::int64_t epoch) override;
  void on_epoch_end(training::Trainer&, std::int64_t epoch) override;
  // Gathers every rank's `growth` (EpochRecorder::growth) too; the same
  // report on every rank. Collective.
  RankReport finish(const std::optional<debug::Diff>& growth);

 private:
  std::shared_ptr<const EpochRecorder> recorder_;
  RankReport report_;
};

}  // namespace ndgc::train_tool
