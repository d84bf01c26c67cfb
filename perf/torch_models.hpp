// The LibTorch peers of ndgc-train's CNN and LSTM (Architecture::cnn and
// ::lstm with their default sizes), for perf/layers_bench.cpp's steps and
// perf/torch_epoch.cpp's epochs. Both take rows of 784 pixels.
#pragma once

#include <torch/torch.h>

namespace ndgc_perf {

// conv 32 3x3 pad 1, BatchNorm, ReLU, max-pool 2 | conv 64 ... | flatten,
// dropout 0.25, linear 128, ReLU, linear 10; its input [N, 1, 28, 28].
inline torch::nn::Sequential torch_cnn() {
  namespace tnn = torch::nn;
  return tnn::Sequential(tnn::Conv2d(tnn::Conv2dOptions(1, 32, 3).padding(1)), tnn::BatchNorm2d(32), tnn::ReLU(),
                         tnn::MaxPool2d(2), tnn::Conv2d(tnn::Conv2dOptions(32, 64, 3).padding(1)),
                         tnn::BatchNorm2d(64), tnn::ReLU(), tnn::MaxPool2d(2), tnn::Flatten(), tnn::Dropout(0.25),
                         tnn::Linear(64 * 7 * 7, 128), tnn::ReLU(), tnn::Linear(128, 10));
}

// 28 steps of 28 features, LSTM(128), the last step into linear 10.
struct TorchLstmImpl : torch::nn::Module {
  torch::nn::LSTM lstm{nullptr};
  torch::nn::Linear head{nullptr};
  TorchLstmImpl() {
    lstm = register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(28, 128).batch_first(true)));
    head = register_module("head", torch::nn::Linear(128, 10));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = std::get<0>(lstm->forward(x.view({x.size(0), 28, 28})));
    return head->forward(y.select(1, 27));
  }
};
TORCH_MODULE(TorchLstm);

}  // namespace ndgc_perf
