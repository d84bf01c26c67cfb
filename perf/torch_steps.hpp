// A LibTorch peer's training step timed as the ndgc benchmarks time theirs:
// at state.range(0) intra-op threads, three warm-up steps, then one step per
// iteration; counters "loss" (the last step's) and "threads". `step` runs
// one step and returns its loss.
#pragma once

#include <benchmark/benchmark.h>
#include <torch/torch.h>

template <class Step>
void time_torch_steps(benchmark::State& state, Step&& step) {
  const int saved = torch::get_num_threads();
  torch::set_num_threads(int(state.range(0)));
  for (int i = 0; i < 3; ++i) step();
  double loss = 0;
  for (auto _ : state) loss = step();
  state.counters["loss"] = loss;
  state.counters["threads"] = torch::get_num_threads();
  torch::set_num_threads(saved);
}
