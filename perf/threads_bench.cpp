// Intra-op threads (issue 29): one steady training step of an MLP at a given
// thread count, ndgc beside LibTorch when it is found.
//   - wide: 784-2048-2048-10, batch 512, Adam 1e-3 (GEMM-bound);
//   - demo: 784-128-64-10, batch 32, the tools/demo model (hand-off-bound).
// The argument is the thread count (ndgc::set_num_threads, torch::set_num_threads).
// Each iteration is one step on the same fixed random batch: data and
// batching are out of the picture, the kernels are all that is measured.
//
//   build/perf/bench_threads --benchmark_repetitions=3 (see perf/RESULTS.md)
#include <benchmark/benchmark.h>

#include <vector>

#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "ndgc_steps.hpp"

#if NDGC_HAVE_TORCH
#include "torch_steps.hpp"
#endif

namespace {

using namespace ndgc;

struct Shape3 {
  std::int64_t in, h1, h2, out, batch;
};
constexpr Shape3 kWide{784, 2048, 2048, 10, 512};
constexpr Shape3 kDemo{784, 128, 64, 10, 32};

void run_ndgc(benchmark::State& state, const Shape3& s) {
  time_ndgc_steps(state, [&] { return std::make_unique<nn::Mlp>(s.in, s.out, std::vector<std::int64_t>{s.h1, s.h2}); },
                  s.batch, s.in, s.out);
}

void BM_wide_ndgc(benchmark::State& state) { run_ndgc(state, kWide); }
void BM_demo_ndgc(benchmark::State& state) { run_ndgc(state, kDemo); }
BENCHMARK(BM_wide_ndgc)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_demo_ndgc)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

#if NDGC_HAVE_TORCH
void run_torch(benchmark::State& state, const Shape3& s) {
  torch::manual_seed(7);
  auto xavier = [](std::int64_t r, std::int64_t c) {
    const double a = std::sqrt(6.0 / double(r + c));
    return torch::empty({r, c}).uniform_(-a, a).requires_grad_();
  };
  torch::Tensor W1 = xavier(s.in, s.h1), W2 = xavier(s.h1, s.h2), W3 = xavier(s.h2, s.out);
  torch::Tensor b1 = torch::zeros({s.h1}).requires_grad_(), b2 = torch::zeros({s.h2}).requires_grad_(),
                b3 = torch::zeros({s.out}).requires_grad_();
  torch::optim::Adam adam({W1, b1, W2, b2, W3, b3}, torch::optim::AdamOptions(1e-3));
  torch::Tensor x = torch::rand({s.batch, s.in});
  torch::Tensor y = torch::randint(0, s.out, {s.batch}, torch::kInt64);
  time_torch_steps(state, [&] {
    torch::Tensor h1 = torch::relu(torch::addmm(b1, x, W1));
    torch::Tensor h2 = torch::relu(torch::addmm(b2, h1, W2));
    torch::Tensor loss = torch::nn::functional::cross_entropy(torch::addmm(b3, h2, W3), y);
    adam.zero_grad();
    loss.backward();
    adam.step();
    return loss.item<float>();
  });
}

void BM_wide_torch(benchmark::State& state) { run_torch(state, kWide); }
void BM_demo_torch(benchmark::State& state) { run_torch(state, kDemo); }
BENCHMARK(BM_wide_torch)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_demo_torch)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
#endif

}  // namespace

BENCHMARK_MAIN();
