// LibTorch's peer of an `ndgc-train` epoch (issue 40, item 5): the same
// models (perf/torch_models.hpp: ndgc-train's CNN and LSTM), on
// Fashion-MNIST, batch 32, Adam 1e-3, shuffled, at most --limit-batches
// training batches and as many test batches (the whole
// test set with 0), one epoch after another. Each epoch prints one line:
// its training pass, its test pass and the two together, in seconds, and
// the test accuracy. ndgc-train's own epoch seconds are the same two
// passes (training and test).
//
//   OMP_NUM_THREADS=1 perf/peer_at_best.sh build-native/perf/torch_epoch --model cnn --threads 1 \
//       --limit-batches 300 --epochs 2          (see perf/RESULTS.md)
//
// The data is read with ndgc's loader (untimed) and copied into tensors once.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <ndgc/data.hpp>
#include <ndgc/ndgc.hpp>

#include "torch_models.hpp"

namespace {

constexpr std::int64_t kBatch = 32;

struct Args {
  std::string model = "cnn";
  int threads = 1;
  std::int64_t limit_batches = 300, epochs = 1;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--model") a.model = value;
    else if (flag == "--threads") a.threads = std::atoi(value);
    else if (flag == "--limit-batches") a.limit_batches = std::atoll(value);
    else if (flag == "--epochs") a.epochs = std::atoll(value);
    else {
      std::fprintf(stderr, "usage: torch_epoch --model cnn|lstm --threads N --limit-batches N --epochs N\n");
      std::exit(2);
    }
  }
  if (a.model != "cnn" && a.model != "lstm") {
    std::fprintf(stderr, "torch_epoch: --model is cnn or lstm, not '%s'\n", a.model.c_str());
    std::exit(2);
  }
  return a;
}

struct Split {
  torch::Tensor x, y;
};

Split load(ndgc::data::Split which) {
  ndgc::NDManager m = ndgc::NDManager::new_base_manager("torch-epoch-data");
  const ndgc::data::ArrayDataset d = ndgc::data::FashionMnist::load(m, which);
  const std::vector<float> x = d.features().to_vector<float>();
  const std::vector<std::int64_t> y = d.labels().to_vector<std::int64_t>();
  const auto rows = std::int64_t(y.size());
  return {torch::from_blob(const_cast<float*>(x.data()), {rows, 784}, torch::kFloat32).clone(),
          torch::from_blob(const_cast<std::int64_t*>(y.data()), {rows}, torch::kInt64).clone()};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <class Net, class Forward>
void run(Net& net, const Args& a, const Split& train, const Split& test, Forward&& forward) {
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-3));
  const std::int64_t train_batches = train.y.size(0) / kBatch, test_rows = test.y.size(0);
  const std::int64_t steps = a.limit_batches > 0 ? std::min(a.limit_batches, train_batches) : train_batches;
  std::int64_t test_batches = (test_rows + kBatch - 1) / kBatch;
  if (a.limit_batches > 0) test_batches = std::min(test_batches, a.limit_batches);
  for (std::int64_t epoch = 1; epoch <= a.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    net->train();
    const torch::Tensor order = torch::randperm(train.y.size(0), torch::kInt64);
    for (std::int64_t b = 0; b < steps; ++b) {
      const torch::Tensor rows = order.narrow(0, b * kBatch, kBatch);
      const torch::Tensor loss =
          torch::nn::functional::cross_entropy(forward(train.x.index_select(0, rows)), train.y.index_select(0, rows));
      adam.zero_grad();
      loss.backward();
      adam.step();
    }
    const double train_seconds = seconds_since(start);
    const auto test_start = std::chrono::steady_clock::now();
    net->eval();
    std::int64_t correct = 0, seen = 0;
    {
      torch::NoGradGuard no_grad;
      for (std::int64_t b = 0; b < test_batches; ++b) {
        const std::int64_t first = b * kBatch, count = std::min(kBatch, test_rows - first);
        const torch::Tensor logits = forward(test.x.narrow(0, first, count));
        correct += logits.argmax(1).eq(test.y.narrow(0, first, count)).sum().item<std::int64_t>();
        seen += count;
      }
    }
    const double test_seconds = seconds_since(test_start);
    std::printf("epoch %lld: train %.3f s, test %.3f s, epoch %.3f s, accuracy %.4f (%s, %d threads, %lld batches)\n",
                static_cast<long long>(epoch), train_seconds, test_seconds, train_seconds + test_seconds,
                double(correct) / double(seen), a.model.c_str(), torch::get_num_threads(),
                static_cast<long long>(steps));
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  torch::set_num_threads(a.threads);
  torch::manual_seed(42);
  const Split train = load(ndgc::data::Split::train), test = load(ndgc::data::Split::test);
  if (a.model == "cnn") {
    torch::nn::Sequential net = ndgc_perf::torch_cnn();
    run(net, a, train, test, [&](const torch::Tensor& x) { return net->forward(x.view({x.size(0), 1, 28, 28})); });
  } else {
    ndgc_perf::TorchLstm net;
    run(net, a, train, test, [&](const torch::Tensor& x) { return net->forward(x); });
  }
  return 0;
}
