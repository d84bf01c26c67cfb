// One training epoch of the MLP (784→128→64→10, ReLU, softmax cross
// entropy, Adam lr 1e-3, batch 32, shuffled) in three implementations:
//   - ndgc: Model + Trainer + ArrayDataset, exactly the loop fit() runs
//     (also with auto-close on);
//   - hand-written Eigen: preallocated row-major matrices, manual backward,
//     fused Adam: the floor for this workload on one core;
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

void run_ndgc(benchmark::State& state, bool autoclose) {
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

// ---- hand-written Eigen ----------------------------------------------------------------

using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Row = Eigen::Matrix<float, 1, Eigen::Dynamic>;

struct AdamState {
  Mat m, v;
  explicit AdamState(Eigen::Index r, Eigen::Index c) : m(Mat::Zero(r, c)), v(Mat::Zero(r, c)) {}
};

// One pass over the parameter: the same maths as nn::Adam.
void adam_step(float* w, const float* g, float* m, float* v, Eigen::Index n, int t) {
  const float b1 = 0.9f, b2 = 0.999f, lr = 1e-3f, eps = 1e-8f;
  const float step = lr / (1 - std::pow(b1, float(t)));
  const float inv_bc2 = 1 / (1 - std::pow(b2, float(t)));
  Eigen::Map<Eigen::ArrayXf> W(w, n), M(m, n), V(v, n);
  Eigen::Map<const Eigen::ArrayXf> G(g, n);
  M = b1 * M + (1 - b1) * G;
  V = b2 * V + (1 - b2) * G.square();
  W -= step * M / ((V * inv_bc2).sqrt() + eps);
}

void BM_epoch_eigen(benchmark::State& state) {
  const HostData& h = host_data();
  std::mt19937_64 rng(7);
  auto xavier = [&](Eigen::Index r, Eigen::Index c) {
    std::uniform_real_distribution<float> u(-std::sqrt(6.0f / float(r + c)), std::sqrt(6.0f / float(r + c)));
    Mat w(r, c);
    for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = u(rng);
    return w;
  };
  Mat W1 = xavier(kIn, kH1), W2 = xavier(kH1, kH2), W3 = xavier(kH2, kOut);
  Row b1 = Row::Zero(kH1), b2 = Row::Zero(kH2), b3 = Row::Zero(kOut);
  Mat dW1(kIn, kH1), dW2(kH1, kH2), dW3(kH2, kOut);
  Row db1(kH1), db2(kH2), db3(kOut);
  AdamState sW1(kIn, kH1), sW2(kH1, kH2), sW3(kH2, kOut), sb1(1, kH1), sb2(1, kH2), sb3(1, kOut);
  Mat X(kBatch, kIn), H1(kBatch, kH1), H2(kBatch, kH2), Z(kBatch, kOut), dZ(kBatch, kOut), dH2(kBatch, kH2),
      dH1(kBatch, kH1);
  std::vector<std::int64_t> order(std::size_t(h.rows));
  std::iota(order.begin(), order.end(), 0);
  int t = 0;
  double tail = 0;
  for (auto _ : state) {
    std::shuffle(order.begin(), order.end(), rng);
    const std::int64_t steps = (h.rows + kBatch - 1) / kBatch;
    tail = 0;
    for (std::int64_t s = 0; s < steps; ++s) {
      const std::int64_t begin = s * kBatch, rows = std::min(kBatch, h.rows - begin);
      for (std::int64_t r = 0; r < rows; ++r)
        std::copy_n(h.x.data() + order[std::size_t(begin + r)] * kIn, kIn, X.row(r).data());
      auto x = X.topRows(rows);
      auto h1 = H1.topRows(rows), h2 = H2.topRows(rows), z = Z.topRows(rows), dz = dZ.topRows(rows);
      auto dh2 = dH2.topRows(rows), dh1 = dH1.topRows(rows);
      h1.noalias() = x * W1;
      h1 = (h1.rowwise() + b1).cwiseMax(0.0f);
      h2.noalias() = h1 * W2;
      h2 = (h2.rowwise() + b2).cwiseMax(0.0f);
      z.noalias() = h2 * W3;
      z.rowwise() += b3;
      // Softmax cross entropy and its gradient (softmax - onehot) / rows.
      double loss = 0;
      for (std::int64_t r = 0; r < rows; ++r) {
        auto zr = z.row(r);
        const float mx = zr.maxCoeff();
        dz.row(r) = (zr.array() - mx).exp().matrix();
        const float sum = dz.row(r).sum();
        const std::int64_t label = h.y[std::size_t(order[std::size_t(begin + r)])];
        loss += std::log(sum) - (zr(label) - mx);
        dz.row(r) /= sum;
        dz(r, label) -= 1;
      }
      dz /= float(rows);
      dW3.noalias() = h2.transpose() * dz;
      db3 = dz.colwise().sum();
      dh2.noalias() = dz * W3.transpose();
      dh2 = (h2.array() > 0).select(dh2, 0.0f);
      dW2.noalias() = h1.transpose() * dh2;
      db2 = dh2.colwise().sum();
      dh1.noalias() = dh2 * W2.transpose();
      dh1 = (h1.array() > 0).select(dh1, 0.0f);
      dW1.noalias() = x.transpose() * dh1;
      db1 = dh1.colwise().sum();
      ++t;
      adam_step(W1.data(), dW1.data(), sW1.m.data(), sW1.v.data(), W1.size(), t);
      adam_step(b1.data(), db1.data(), sb1.m.data(), sb1.v.data(), b1.size(), t);
      adam_step(W2.data(), dW2.data(), sW2.m.data(), sW2.v.data(), W2.size(), t);
      adam_step(b2.data(), db2.data(), sb2.m.data(), sb2.v.data(), b2.size(), t);
      adam_step(W3.data(), dW3.data(), sW3.m.data(), sW3.v.data(), W3.size(), t);
      adam_step(b3.data(), db3.data(), sb3.m.data(), sb3.v.data(), b3.size(), t);
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
BENCHMARK(BM_epoch_eigen)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
#if NDGC_HAVE_TORCH
BENCHMARK(BM_epoch_torch)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_epoch_torch_1thread)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
#endif

BENCHMARK_MAIN();
