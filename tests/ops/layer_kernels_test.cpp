// The CPU layer kernels (src/ops/cpu/conv_kernels.cpp, layer_kernels.cpp,
// norm_kernels.cpp) give the same bits for any thread count: each splits its
// outer loop with parallel_for and reduces inside one piece in a fixed order
// (docs/design.md §7c). Sizes are above the grain so that the work is cut.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <ndgc/autograd.hpp>
#include <ndgc/ndgc.hpp>

using namespace ndgc;

namespace {

std::vector<double> wave(std::int64_t n, double f) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i) * f) + 0.1 * std::cos(double(i) * 0.37);
  return v;
}

// Every layer op forward and backward on one thread count: outputs and gradients, flattened.
std::vector<std::vector<float>> run_all(int threads) {
  set_num_threads(threads);
  NDManager m = NDManager::new_base_manager("layer-threads");
  NDArray x = m.create(wave(4 * 8 * 32 * 32, 0.7), {4, 8, 32, 32}).to_type(DataType::float32);
  NDArray w = m.create(wave(16 * 4 * 3 * 3, 1.3), {16, 4, 3, 3}).to_type(DataType::float32);
  NDArray b = m.create(wave(16, 2.1), {16}).to_type(DataType::float32);
  NDArray g = m.ones({16}), beta = m.zeros({16}), rm = m.zeros({16}), rv = m.ones({16});
  NDArray ln = m.ones({30}), lb = m.zeros({30});
  NDArray table = m.create(wave(50 * 64, 0.3), {50, 64}).to_type(DataType::float32);
  std::vector<double> iv(4096);
  for (std::size_t i = 0; i < iv.size(); ++i) iv[i] = double(i * 7 % 50);
  NDArray idx = m.create(iv, {4096}).to_type(DataType::int64);
  for (NDArray* p : {&x, &w, &b, &g, &beta, &ln, &lb, &table}) p->set_requires_gradient(true);
  std::vector<std::vector<float>> out;
  {
    GradientCollector collector;
    set_random_seed(3);
    NDArray y = conv2d(x, w, b, {1, 1}, {1, 1}, {1, 1}, 2);
    y = batch_norm(y, g, beta, rm, rv, true);
    NDArray p = max_pool2d(y.gelu(), {2, 2}, {2, 2}).add(avg_pool2d(y, {3, 3}, {2, 2}, {1, 1}));
    NDArray q = dropout(p, 0.3, true).reshape({4, 16, 16 * 16}).get(":, :, :30");
    NDArray r = layer_norm(q, ln, lb);
    NDArray e = embedding(idx, table);
    NDArray loss = r.square().sum().add(e.mul(e).sum());
    for (const NDArray& a : {y, p, r, e}) out.push_back(a.to_vector<float>());
    collector.backward(loss);
  }
  for (NDArray* p : {&x, &w, &b, &g, &beta, &ln, &lb, &table}) out.push_back(p->gradient().to_vector<float>());
  out.push_back(rm.to_vector<float>());
  out.push_back(rv.to_vector<float>());
  return out;
}

}  // namespace

TEST_CASE("layer kernels: the same bits on 1, 2 and 4 threads") {
  const int saved = num_threads();
  const auto one = run_all(1);
  for (int threads : {2, 4}) {
    CAPTURE(threads);
    const auto many = run_all(threads);
    REQUIRE(many.size() == one.size());
    for (std::size_t i = 0; i < one.size(); ++i) {
      CAPTURE(i);
      CHECK(many[i] == one[i]);
    }
  }
  set_num_threads(saved);
}
