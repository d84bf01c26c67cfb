// run_training(): set the switch, load the data, build the model on its
// device, fit with the listeners that measure (EpochRecorder), show progress
// (ProgressBar) and leak (--leak model), and collect the result.
//
// Note [A run that dies]
// Under --gpu-limit the leaking run is meant to die as DJL users' runs did:
// OutOfMemory in the middle of an epoch. That is a result, not a crash: the
// run keeps the epochs it finished, records where it died (the recorder
// knows the epoch, phase and step) and the error's first line, and returns
// normally once the model's managers have closed and given their memory
// back; --compare then goes on with the other configurations. Other errors
// still end the run. Under mpirun the other ranks would wait forever in a
// collective, so there the error ends the job as before.
#include "run.hpp"

#include <optional>

#include <fmt/format.h>

#include <ndgc/data.hpp>
#include <ndgc/debug.hpp>
#include <ndgc/error.hpp>
#include <ndgc/gc.hpp>
#include <ndgc/model_file.hpp>
#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "leak.hpp"
#include "progress.hpp"
#include "rank_support.hpp"
#include "recorder.hpp"
#include "site_recorder.hpp"
#include "trace_support.hpp"
#include "trained_model.hpp"

namespace ndgc::train_tool {
namespace {

void set_autoclose(AutoClose mode) {
  switch (mode) {
    case AutoClose::off: gc::disable(); break;
    case AutoClose::on: gc::enable(gc::Detector::refcount); break;
    case AutoClose::trace:
      if (!trace_linked())
        throw InvalidArgument("ndgc-train: --autoclose trace needs a build that links ndgc::trace (Boehm GC)");
      gc::enable(gc::Detector::trace);
      break;
  }
}

}  // namespace

std::filesystem::path check_data(const Options& o) {
  const std::filesystem::path dir = o.data_dir.empty() ? data::FashionMnist::default_directory() : o.data_dir;
  if (!data::FashionMnist::available(dir))
    throw DataError(fmt::format(
        "ndgc-train: Fashion-MNIST is not in {} (expected train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], "
        "t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]); install dataset-fashion-mnist "
        "(tools/bootstrap) or pass --data-dir",
        dir.string()));
  return dir;
}

RunResult run_training(const Options& o, std::ostream& progress, bool terminal) {
  // A malformed NDGC_NUM_THREADS is an error before any work.
  if (o.compute_threads > 0) set_num_threads(o.compute_threads);
  else (void)num_threads();
  const std::filesystem::path dir = check_data(o);
  set_autoclose(o.autoclose);
  // What auto-close closes, by site, for the report page's leak table (Note [Reclaims by site]).
  debug::reset_reclaimed();
  debug::set_count_reclaimed(o.autoclose != AutoClose::off);
  set_random_seed(o.seed);

  if (!o.device.is_cpu()) {
    check_device(o.device, "ndgc-train --device " + device_argument(o.device));
    if (o.gpu_limit > 0) memory::set_limit(o.device, o.gpu_limit);
  }
  // The data stays on the host; fit() makes each batch on the model's
  // device (gathered on the host, one copy per array: ndgc/data.hpp).
  // Closed at the end of the run's scope below, before the trace detector's report.
  std::optional<TrainedModel> trained(std::in_place, o.model, o.device, o.batch_size);

  NDManager data_manager = NDManager::new_base_manager("data");
  data::ArrayDataset train = trained->shaped(data::FashionMnist::load(data_manager, data::Split::train, dir));
  data::ArrayDataset test = trained->shaped(data::FashionMnist::load(data_manager, data::Split::test, dir));
  const int prefetch = o.threads > 1 ? 2 : 0;
  train.set_batch_size(o.batch_size).set_shuffle(true, o.seed).set_limit_batches(o.limit_batches).set_prefetch(prefetch);
  test.set_batch_size(o.batch_size).set_limit_batches(o.limit_batches).set_prefetch(prefetch);
  shard_for_job(train, test);  // under mpirun: this rank's part of each epoch (rank_support.hpp)

  RunResult result;
  result.model = o.model;
  result.config = config_name({o.autoclose, o.workspace});
  result.leak = std::string(to_string(o.leak));
  result.batches_per_epoch = train.batch_count();
  result.batch_size = o.batch_size;
  result.compute_threads = num_threads();
  result.seed = o.seed;
  result.device = device_argument(o.device);
  result.precision = std::string(training::to_string(o.precision));
  {
    Model& model = trained->model();
    training::TrainingConfig config;
    config.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
    config.optimizer = std::make_shared<nn::Adam>(1e-3);
    config.metrics.push_back(std::make_shared<training::Accuracy>());
    config.workspace_mode = o.workspace ? training::WorkspaceMode::enabled : training::WorkspaceMode::none;
    config.cuda_graph = o.cuda_graph;
    config.precision = o.precision;
    auto recorder = std::make_shared<EpochRecorder>(o.device, train.batch_count(), test.batch_count());
    config.listeners.push_back(recorder);  // first: see recorder.hpp
    std::shared_ptr<RankGatherer> gatherer;
    if (job_ranks().distributed) config.listeners.push_back(gatherer = std::make_shared<RankGatherer>(recorder));
    add_gradient_reducer(config);
    config.listeners.push_back(std::make_shared<ProgressBar>(progress, terminal, config_name({o.autoclose, o.workspace}),
                                                             o.epochs, train.batch_count(), o.device));
    if (o.leak == Leak::model) config.listeners.push_back(make_model_leak(model));
    std::shared_ptr<SiteRecorder> sites;
    if (o.memory_every > 0 && job_ranks().rank == 0) {  // rank 0 alone writes files
      config.listeners.push_back(std::make_shared<training::MemoryTimelineListener>(
          o.memory_every, o.out / ("run-" + result.config + "-memory.csv")));
      config.listeners.push_back(sites = std::make_shared<SiteRecorder>(o.memory_every, o.device));
    }
    config.listeners.push_back(recorder->step_end_marker());  // last: see recorder.hpp
    training::Trainer trainer(model, config);
    try {
      training::fit(trainer, o.epochs, train, &test);
    } catch (const OutOfMemory& e) {
      // Note [A run that dies]: reported, not fatal; what it held is freed below.
      if (gatherer) throw;  // the other ranks wait in a collective: end the job
      result.failure = recorder->failure("OutOfMemory", e.what());
      recorder->snapshot_at_failure();  // the leak report then shows what grew until it died
      progress << fmt::format("[{}] {}: {}", result.config, where_it_died(*result.failure), result.failure->message)
               << std::endl;
    }

    // A run that died of OutOfMemory saves nothing: its model is half-trained.
    if (!o.save.empty() && !result.failure && job_ranks().rank == 0) trained->save(o.save);
    if (o.workspace) {
      const workspace::Stats s = workspace::stats(trainer.workspace_name());
      result.workspace = WorkspaceFigures{s.capacity, s.peak_used, s.spilled_bytes, s.cycles, s.allocations};
    }
    if (const training::LossScaler* s = trainer.loss_scaler())
      result.loss_scaling = ScalerFigures{s->scale(), s->skipped_steps()};
    result.epochs = recorder->rows();
    result.growth = recorder->growth();
    result.report = recorder->report();
    if (sites) result.report.timeline = sites->timeline_json();
    if (gatherer) result.ranks = gatherer->finish(result.growth);
  }
  trained.reset();
  if (o.autoclose == AutoClose::trace) result.trace_leaks = collect_trace_leaks();
  debug::set_count_reclaimed(false);
  for (const debug::OrphanGroup& g : debug::reclaimed().groups)
    result.autoclose_reclaims.push_back({g.site.file, g.site.line, g.arrays, g.bytes});
  return result;
}

}  // namespace ndgc::train_tool
