// ndgc::distributed calls for ndgc-train, compiled with
// NDGC_TRAIN_HAVE_DISTRIBUTED=1 only into a program that links it.
//
// Figures travel as small arrays through ProcessGroup::all_gather, in a base
// manager of their own ("rank figures"), closed at once: no rank's leak
// report sees them. A diff's JSON varies in length per rank, so its length is
// gathered first and every rank pads to the longest.
#include "rank_support.hpp"

#include <cstdlib>
#include <string>
#include <vector>

#include <ndgc/device.hpp>
#include <ndgc/error.hpp>
#include <ndgc/memory.hpp>

#if NDGC_TRAIN_HAVE_DISTRIBUTED
#include <ndgc/distributed.hpp>
#endif

namespace ndgc::train_tool {

bool launched_by_mpirun() noexcept {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

#if NDGC_TRAIN_HAVE_DISTRIBUTED

namespace {

std::optional<distributed::ProcessGroup>& group() {
  static std::optional<distributed::ProcessGroup> g;
  return g;
}

distributed::ProcessGroup& job_group() {
  if (!group()) group() = distributed::ProcessGroup::from_environment();
  return *group();
}

NDManager& figures_manager() {
  static NDManager m = NDManager::new_base_manager("rank figures");
  return m;
}

// all_gather of one double row per rank: [rank][k].
std::vector<std::vector<double>> gather(const std::vector<double>& mine) {
  NDArray a = figures_manager().create(mine);
  NDArray all = job_group().all_gather(a);
  const std::vector<double> flat = all.to_vector<double>();
  a.close();
  all.close();
  std::vector<std::vector<double>> out;
  for (std::size_t at = 0; at < flat.size(); at += mine.size())
    out.emplace_back(flat.begin() + std::ptrdiff_t(at), flat.begin() + std::ptrdiff_t(at + mine.size()));
  return out;
}

std::vector<std::string> gather(const std::string& mine) {
  std::size_t longest = 0;
  for (const auto& row : gather(std::vector<double>{double(mine.size())})) longest = std::max(longest, std::size_t(row[0]));
  std::vector<std::uint8_t> padded(longest + 1, 0);  // +1: never an empty array
  std::copy(mine.begin(), mine.end(), padded.begin());
  NDArray a = figures_manager().create(padded);
  NDArray all = job_group().all_gather(a);
  const std::vector<std::uint8_t> flat = all.to_vector<std::uint8_t>();
  a.close();
  all.close();
  std::vector<std::string> out;
  for (std::size_t at = 0; at < flat.size(); at += padded.size()) {
    const char* s = reinterpret_cast<const char*>(flat.data() + at);
    out.emplace_back(s, std::find(flat.begin() + std::ptrdiff_t(at), flat.begin() + std::ptrdiff_t(at + padded.size()),
                                  std::uint8_t(0)) -
                            (flat.begin() + std::ptrdiff_t(at)));
  }
  return out;
}

}  // namespace

bool distributed_linked() noexcept { return true; }

JobRanks job_ranks() {
  if (!launched_by_mpirun()) return {};
  distributed::ProcessGroup& g = job_group();
  return {g.rank(), g.size(), true};
}

void shard_for_job(data::ArrayDataset& train, data::ArrayDataset& test) {
  const JobRanks r = job_ranks();
  if (!r.distributed) return;
  train.set_shard(r.rank, r.size);
  test.set_shard(r.rank, r.size);
}

void add_gradient_reducer(training::TrainingConfig& config) {
  if (job_ranks().distributed) config.gradient_reducer = distributed::make_gradient_reducer(job_group());
}

#else

bool distributed_linked() noexcept { return false; }

JobRanks job_ranks() {
  // Every rank would run alone and write the same files.
  if (launched_by_mpirun())
    throw InvalidArgument(
        "ndgc-train: started by mpirun, but this build has no ndgc::distributed (CMake found no MPI); install "
        "libopenmpi-dev (tools/bootstrap) and rebuild");
  return {};
}
void shard_for_job(data::ArrayDataset&, data::ArrayDataset&) {}
void add_gradient_reducer(training::TrainingConfig&) {}

namespace {
std::vector<std::vector<double>> gather(const std::vector<double>& mine) { return {mine}; }
std::vector<std::string> gather(const std::string& mine) { return {mine}; }
}  // namespace

#endif

void RankGatherer::on_epoch_begin(training::Trainer&, std::int64_t) {
  for (int i = 0; i < gpu_count(); ++i) memory::reset_peak(Device::gpu(i));
}

void RankGatherer::on_epoch_end(training::Trainer&, std::int64_t) {
  const EpochRow& row = recorder_->rows().back();
  double gpu_bytes = 0, gpu_peak = 0;
  for (int i = 0; i < gpu_count(); ++i) {
    const memory::Stats s = memory::stats(Device::gpu(i));
    gpu_bytes += double(s.current_bytes), gpu_peak += double(s.peak_bytes);
  }
  const auto all = gather(std::vector<double>{row.seconds, double(row.bytes_in_use), double(row.peak_bytes), gpu_bytes,
                                              gpu_peak, double(row.live_arrays), gpu_count() > 0 ? 1.0 : 0.0});
  std::vector<RankEpoch> ranks;
  for (const auto& v : all) {
    ranks.push_back({v[0], std::uint64_t(v[1]), std::uint64_t(v[2]), std::uint64_t(v[3]), std::uint64_t(v[4]),
                     std::uint64_t(v[5])});
    report_.gpu = report_.gpu || v[6] > 0;
  }
  report_.size = int(all.size());
  report_.epochs.push_back(std::move(ranks));
}

RankReport RankGatherer::finish(const std::optional<debug::Diff>& growth) {
  report_.growth.clear();
  for (const std::string& json : gather(growth ? growth->to_json() : std::string()))
    report_.growth.push_back(json.empty() ? std::nullopt : std::optional(debug::Diff::from_json(json)));
  return report_;
}

}  // namespace ndgc::train_tool
