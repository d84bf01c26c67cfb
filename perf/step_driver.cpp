// One steady-state MLP training step, for instruction counts under callgrind
// (perf/callgrind_step.sh): `step_driver ndgc|ndgc-autoclose|ndgc-workspace|eigen [steps] [ftz]`
// (ndgc-workspace: the Trainer's WorkspaceMode::enabled; ftz: the processor's
// flush-to-zero and denormals-are-zero modes on for the whole run, x86 only)
// warms up, then runs `steps` steps (default 20) with callgrind's collection
// switched on around them only (run it with --collect-atstart=no), so the
// total the tool reports, divided by `steps`, is the cost of one step.
// Both sides train on the same random data (784 features, labels 0..9,
// batch 32, shuffled); a step is fetching the batch and training on it.
// Outside valgrind the client requests are no-ops; the driver also prints the
// measured steps' wall time per step (perf/RESULTS.md, issue 16), and for
// ndgc the bytes its host block caches hold at the end: 0 means the run used
// exact allocations (sanitizers, Memcheck) rather than the allocator that
// ships, and perf/callgrind_step.sh refuses such a count.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include <valgrind/callgrind.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <ndgc/data.hpp>
#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "eigen_mlp.hpp"

namespace {

using namespace ndgc;
using perf::EigenMlp;

constexpr int kWarmup = 50;

// Wall time of the measured steps: started and stopped where callgrind's
// collection is toggled, so both figures cover the same instructions.
struct StepClock {
  std::chrono::steady_clock::time_point begin, end;
  void toggle() {
    CALLGRIND_TOGGLE_COLLECT;
    (begin == std::chrono::steady_clock::time_point{} ? begin : end) = std::chrono::steady_clock::now();
  }
  double ns_per_step(int steps) const { return std::chrono::duration<double, std::nano>(end - begin).count() / steps; }
};

struct Data {
  std::vector<float> x;
  std::vector<std::int64_t> y;
  std::int64_t rows;
};

Data make_data(std::int64_t rows) {
  Data d{std::vector<float>(std::size_t(rows * EigenMlp::kIn)), std::vector<std::int64_t>(std::size_t(rows)), rows};
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(0, 1);
  for (float& v : d.x) v = u(rng);
  for (std::int64_t& v : d.y) v = std::int64_t(rng() % 10);
  return d;
}

double run_ndgc(const Data& d, int steps, bool autoclose, bool workspace, StepClock& clock) {
  autoclose ? gc::enable() : gc::disable();
  set_random_seed(7);
  Model model("step mlp", std::make_unique<nn::Mlp>(EigenMlp::kIn, EigenMlp::kOut,
                                                     std::vector<std::int64_t>{EigenMlp::kH1, EigenMlp::kH2}));
  model.initialize(Shape{EigenMlp::kBatch, EigenMlp::kIn});
  data::ArrayDataset train(model.manager().create(d.x, Shape{d.rows, EigenMlp::kIn}), model.manager().create(d.y));
  train.set_batch_size(EigenMlp::kBatch).set_shuffle(true, 42);
  training::TrainingConfig config;
  config.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
  config.optimizer = std::make_shared<nn::Adam>(1e-3);
  if (workspace) config.workspace_mode = training::WorkspaceMode::enabled;
  training::Trainer trainer(model, config);
  double loss = 0;
  int step = 0;
  for (data::Batch& batch : train.batches(trainer.manager(), 0)) {
    // Toggled where the loop body begins, so the measured steps include ++it.
    if (step == kWarmup || step == kWarmup + steps) clock.toggle();
    if (step == kWarmup + steps) break;
    loss += trainer.train_batch(batch, 0);
    ++step;
  }
  gc::disable();
  std::printf("host cache: %llu bytes\n",
              static_cast<unsigned long long>(memory::stats(Device::cpu()).cached_bytes));
  return loss;
}

double run_eigen(const Data& d, int steps, StepClock& clock) {
  std::mt19937_64 rng(7);
  EigenMlp mlp(rng);
  std::vector<std::int64_t> order(std::size_t(d.rows));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  double loss = 0;
  for (int step = 0; step < kWarmup + steps; ++step) {
    if (step == kWarmup) clock.toggle();
    loss += mlp.step(d.x.data(), d.y.data(), order.data() + step * EigenMlp::kBatch, EigenMlp::kBatch) /
            double(EigenMlp::kBatch);
  }
  clock.toggle();
  return loss;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  const bool known = !std::strcmp(mode, "ndgc") || !std::strcmp(mode, "ndgc-autoclose") ||
                     !std::strcmp(mode, "ndgc-workspace") || !std::strcmp(mode, "eigen");
  const bool ftz = argc > 3 && !std::strcmp(argv[3], "ftz");
  if (steps <= 0 || !known || (argc > 3 && !ftz) || argc > 4) {
    std::fprintf(stderr, "usage: %s ndgc|ndgc-autoclose|ndgc-workspace|eigen [steps > 0] [ftz]\n", argv[0]);
    return 2;
  }
  if (ftz) {
#if defined(__SSE__)
    _mm_setcsr(_mm_getcsr() | 0x8040);  // FTZ (bit 15) and DAZ (bit 6)
#else
    std::fprintf(stderr, "%s: ftz is x86 only\n", argv[0]);
    return 2;
#endif
  }
  const Data d = make_data(std::int64_t(kWarmup + steps + 1) * EigenMlp::kBatch);
  StepClock clock;
  const double loss = !std::strcmp(mode, "eigen") ? run_eigen(d, steps, clock)
                                                  : run_ndgc(d, steps, !std::strcmp(mode, "ndgc-autoclose"),
                                                             !std::strcmp(mode, "ndgc-workspace"), clock);
  std::printf("%s: %d steps, summed batch loss %.4f, %.0f ns per step\n", mode, steps, loss,
              clock.ns_per_step(steps));
  return 0;
}
