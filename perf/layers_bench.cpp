// The layer models of issue 27 (ndgc-train --model cnn|lstm): one steady
// training step at a given thread count, ndgc beside LibTorch (1.13, conv on
// oneDNN) when it is found, the same architecture, batch 32, Adam 1e-3.
//   - cnn: conv 32 3x3 pad 1, BatchNorm, ReLU, max-pool 2 | conv 64 ... |
//     flatten, dropout 0.25, linear 128, ReLU, linear 10, on 28x28 images;
//   - lstm: 28 steps of 28 features, LSTM(128), the last step into linear 10.
// ndgc runs with workspaces off (arg 2 = 0) and on (1). Each iteration is one
// step on the same fixed random batch: only the kernels are measured.
//
//   build/perf/bench_layers --benchmark_repetitions=3 (see perf/RESULTS.md)
#include <benchmark/benchmark.h>

#include <ndgc/model_file.hpp>
#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "ndgc_steps.hpp"

#if NDGC_HAVE_TORCH
#include "torch_models.hpp"
#include "torch_steps.hpp"
#endif

namespace {

using namespace ndgc;

constexpr std::int64_t kBatch = 32, kPixels = 784, kClasses = 10;

void run_ndgc(benchmark::State& state, const Architecture& arch) {
  time_ndgc_steps(state, [&] { return arch.make_block(); }, kBatch, kPixels, kClasses,
                  state.range(1) ? training::WorkspaceMode::enabled : training::WorkspaceMode::none);
}

void BM_cnn_ndgc(benchmark::State& state) { run_ndgc(state, Architecture::cnn(kPixels, kClasses)); }
BENCHMARK(BM_cnn_ndgc)->Args({1, 0})->Args({2, 0})->Args({2, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_lstm_ndgc(benchmark::State& state) { run_ndgc(state, Architecture::lstm(kPixels, kClasses)); }
BENCHMARK(BM_lstm_ndgc)->Args({1, 0})->Args({2, 0})->Args({2, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

#if NDGC_HAVE_TORCH
template <class Net>
void run_torch(benchmark::State& state, Net& net, const std::function<torch::Tensor(const torch::Tensor&)>& forward) {
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-3));
  net->train();
  torch::Tensor x = torch::rand({kBatch, kPixels});
  torch::Tensor y = torch::randint(0, kClasses, {kBatch}, torch::kInt64);
  time_torch_steps(state, [&] {
    torch::Tensor loss = torch::nn::functional::cross_entropy(forward(x), y);
    adam.zero_grad();
    loss.backward();
    adam.step();
    return loss.item<float>();
  });
}

void BM_cnn_torch(benchmark::State& state) {
  torch::manual_seed(7);
  torch::nn::Sequential net = ndgc_perf::torch_cnn();
  run_torch(state, net, [&](const torch::Tensor& x) { return net->forward(x.view({kBatch, 1, 28, 28})); });
}
BENCHMARK(BM_cnn_torch)->Args({1, 0})->Args({2, 0})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_lstm_torch(benchmark::State& state) {
  torch::manual_seed(7);
  ndgc_perf::TorchLstm net;
  run_torch(state, net, [&](const torch::Tensor& x) { return net->forward(x); });
}
BENCHMARK(BM_lstm_torch)->Args({1, 0})->Args({2, 0})->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

}  // namespace

BENCHMARK_MAIN();
