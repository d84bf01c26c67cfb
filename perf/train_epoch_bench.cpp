// One training epoch of the MLP (784→128→64→10, ReLU, softmax cross
// entropy, Adam lr 1e-3, batch 32, shuffled) in three implementations:
//   - ndgc: Model + Trainer + ArrayDataset, exactly the loop fit() runs
//     (also with auto-close on, and with the Trainer's workspace mode);
//   - hand-written Eigen (eigen_mlp.hpp): preallocated row-major matrices,
//     manual backward, fused Adam: the floor for this workload on one core;
//   - LibTorch (when found): the same loop with autograd and torch::optim::Adam.
// Each iteration is one epoch (1875 steps on Fashion-MNIST's 60000 training
// images; random data of the same shape when the dataset is not installed).
// Counters: final_loss (mean loss of the epoch's last 100 steps, to check that
// the implementations do the same work) and threads.
//
//   build-train/perf/bench_train_epoch --benchmark_min_time=... (see perf/RESULTS.md)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <Eigen/Core>

#include <ndgc/data.hpp>
#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "eigen_mlp.hpp"

#if NDGC_HAVE_TORCH
#include <torch/torch.h>
#endif

namespace {

using namespace ndgc;

constexpr std::int64_t kIn = 784, kH1 = 128, kH2 = 64, kOut = 10, kBatch = 32;

// The training set as host vectors, loaded once.
struct HostData {
  std::vector<float> x;         // rows × 784
  std::vector<std::int64_t> y;  // rows
  std::int64_t rows = 0;
  bool real = false;
};

const HostData& host_data() {
  static const HostData data = [] {
    HostData d;
    NDManager m = NDManager::new_base_manager("bench data");
    if (data::FashionMnist::available()) {
      data::ArrayDataset train = data::FashionMnist::load(m, data::Split::train);
      d.x = train.features().to_vector<float>();
      d.y = train.labels().to_vector<std::int64_t>();
      d.real = true;
    } else {
      set_random_seed(1);
      d.x = m.random_uniform({60000, kIn}).to_vector<float>();
      d.y = m.random_uniform({60000}, 0, 10).to_type(DataType::int64).to_vector<std::int64_t>();
    }
    d.rows = std::int64_t(d.y.size());
    return d;
  }();
  return data;
}

// ---- ndgc ------------------------------------------------------------------------

void run_ndgc(benchmark::State& state, bool autoclose, bool workspace = false) {
  const HostData& h = host_data();
  autoclose ? gc::enable() : gc::disable();
  set_random_seed(7);
  Model model("bench mlp", std::make_unique<nn::Mlp>(kIn, kOut, std::vector<std::int64_t>{kH1, kH2}));
  model.initialize(Shape{kBatch, kIn});
  data::ArrayDataset train(model.manager().create(h.x, Shape{h.rows, kIn}), model.manager().create(h.y));
  train.set_batch_size(kBatch).set_shuffle(true, 42);
  training::TrainingConfig config;
  config.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
  config.optimizer = std::make_shared<nn::Adam>(1e-3);
  if (workspace) config.workspace_mode = training::WorkspaceMode::enabled;
  training::Trainer trainer(model, config);
  std::int64_t epoch = 0;
  double tail = 0;
  for (auto _ : state) {
    tail = 0;
    const std::int64_t steps = train.batch_count();
    for (data::Batch& batch : train.batches(trainer.manager(), epoch)) {
      const double loss = trainer.train_batch(batch, epoch);
      if (batch.index >= steps - 100) tail += loss / 100;
    }
    ++epoch;
  }
  gc::disable();
  state.counters["final_loss"] = tail;
  state.counters["threads"] = 1;
  state.SetLabel(h.real ? "fashion-mnist" : "random data");
}

void BM_epoch_ndgc(benchmark::State& state) { run_ndgc(state, false); }
void BM_epoch_ndgc_autoclose(benchmark::State& state) { run_ndgc(state, true); }
void BM_epoch_ndgc_workspace(benchmark::State& state) { run_ndgc(state, false, true); }

// ---- hand-written Eigen ----------------------------------------------------------------

void BM_epoch_eigen(benchmark::State& state) {
  const HostData& h = host_data();
  std::mt19937_64 rng(7);
  perf::EigenMlp mlp(rng);
  std::vector<std::int64_t> order(std::size_t(h.rows));
  std::iota(order.begin(), order.end(), 0);
  double tail = 0;
  for (auto _ : state) {
    std::shuffle(order.begin(), order.end(), rng);
    const std::int64_t steps = (h.rows + kBatch - 1) / kBatch;
    tail = 0;
    for (std::int64_t s = 0; s < steps; ++s) {
      const std::int64_t begin = s * kBatch, rows = std::min(kBatch, h.rows - begin);
      const double loss = mlp.step(h.x.data(), h.y.data(), order.data() + begin, rows);
      if (s >= steps - 100) tail += loss / double(rows) / 100;
    }
  }
  state.counters["final_loss"] = tail;
  state.counters["threads"] = Eigen::nbThreads();
}

// ---- LibTorch ----------------------------------------------------------------------------

#if NDGC_HAVE_TORCH
void BM_epoch_torch(benchmark::State& state) {
  const HostData& h = host_data();
  torch::manual_seed(7);
  torch::Tensor X = torch::from_blob(const_cast<float*>(h.x.data()), {h.rows, kIn}, torch::kFloat32).clone();
  torch::Tensor Y = torch::from_blob(const_cast<std::int64_t*>(h.y.data()), {h.rows}, torch::kInt64).clone();
  auto xavier = [](std::int64_t r, std::int64_t c) {
    const double a = std::sqrt(6.0 / double(r + c));
    return torch::empty({r, c}).uniform_(-a, a).requires_grad_();
  };
  torch::Tensor W1 = xavier(kIn, kH1), W2 = xavier(kH1, kH2), W3 = xavier(kH2, kOut);
  torch::Tensor b1 = torch::zeros({kH1}).requires_grad_(), b2 = torch::zeros({kH2}).requires_grad_(),
                b3 = torch::zeros({kOut}).requires_grad_();
  torch::optim::Adam adam({W1, b1, W2, b2, W3, b3}, torch::optim::AdamOptions(1e-3));
  double tail = 0;
  for (auto _ : state) {
    torch::Tensor perm = torch::randperm(h.rows, torch::kInt64);
    const std::int64_t steps = (h.rows + kBatch - 1) / kBatch;
    tail = 0;
    for (std::int64_t s = 0; s < steps; ++s) {
      torch::Tensor idx = perm.slice(0, s * kBatch, std::min((s + 1) * kBatch, h.rows));
      torch::Tensor x = X.index_select(0, idx), y = Y.index_select(0, idx);
      torch::Tensor h1 = torch::relu(torch::addmm(b1, x, W1));
      torch::Tensor h2 = torch::relu(torch::addmm(b2, h1, W2));
      torch::Tensor z = torch::addmm(b3, h2, W3);
      torch::Tensor loss = torch::nn::functional::cross_entropy(z, y);
      adam.zero_grad();
      loss.backward();
      adam.step();
      const double l = loss.item<float>();
      if (s >= steps - 100) tail += l / 100;
    }
  }
  state.counters["final_loss"] = tail;
  state.counters["threads"] = torch::get_num_threads();
}

void BM_epoch_torch_1thread(benchmark::State& state) {
  const int threads = torch::get_num_threads();
  torch::set_num_threads(1);
  BM_epoch_torch(state);
  torch::set_num_threads(threads);
}
#endif

}  // namespace

BENCHMARK(BM_epoch_ndgc)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_epoch_ndgc_autoclose)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_epoch_ndgc_workspace)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_epoch_eigen)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
#if NDGC_HAVE_TORCH
BENCHMARK(BM_epoch_torch)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_epoch_torch_1thread)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
#endif

BENCHMARK_MAIN();
