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
  namespace tnn = torch::nn;
  tnn::Sequential net(tnn::Conv2d(tnn::Conv2dOptions(1, 32, 3).padding(1)), tnn::BatchNorm2d(32), tnn::ReLU(),
                      tnn::MaxPool2d(2), tnn::Conv2d(tnn::Conv2dOptions(32, 64, 3).padding(1)), tnn::BatchNorm2d(64),
                      tnn::ReLU(), tnn::MaxPool2d(2), tnn::Flatten(), tnn::Dropout(0.25), tnn::Linear(64 * 7 * 7, 128),
                      tnn::ReLU(), tnn::Linear(128, kClasses));
  run_torch(state, net, [&](const torch::Tensor& x) { return net->forward(x.view({kBatch, 1, 28, 28})); });
}
BENCHMARK(BM_cnn_torch)->Args({1, 0})->Args({2, 0})->Unit(benchmark::kMillisecond)->UseRealTime();

struct LstmNetImpl : torch::nn::Module {
  torch::nn::LSTM lstm{nullptr};
  torch::nn::Linear head{nullptr};
  LstmNetImpl() {
    lstm = register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(28, 128).batch_first(true)));
    head = register_module("head", torch::nn::Linear(128, kClasses));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = std::get<0>(lstm->forward(x.view({kBatch, 28, 28})));
    return head->forward(y.select(1, 27));
  }
};
TORCH_MODULE(LstmNet);

void BM_lstm_torch(benchmark::State& state) {
  torch::manual_seed(7);
  LstmNet net;
  run_torch(state, net, [&](const torch::Tensor& x) { return net->forward(x); });
}
BENCHMARK(BM_lstm_torch)->Args({1, 0})->Args({2, 0})->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

}  // namespace

BENCHMARK_MAIN();
