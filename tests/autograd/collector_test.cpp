// GradientCollector semantics: what is recorded, where gradients live, what
// the tape holds and releases, zeroing, errors and threads.
#include <doctest/doctest.h>

#include <cmath>
#include <thread>

#include <ndgc/autograd.hpp>
#include <ndgc/ndgc.hpp>

#include "test_util.hpp"

namespace ndgc {
namespace {

std::uint64_t allocations() { return memory::stats(Device::cpu()).allocations; }

}  // namespace

TEST_CASE("gradient() returns the same array every call and allocates nothing") {
  NDManager m = NDManager::new_base_manager("params");
  NDArray w = m.ones({4, 3}).set_requires_gradient(true);
  NDArray first = w.gradient();
  const std::uint64_t before = allocations();
  const std::size_t arrays = m.array_count();
  for (int i = 0; i < 1000; ++i) CHECK(w.gradient().same(first));
  CHECK(allocations() == before);
  CHECK(m.array_count() == arrays);
  CHECK(first.shape() == Shape{4, 3});
  CHECK(first.dtype() == DataType::float32);
  CHECK(first.to_vector<float>() == std::vector<float>(12, 0.0f));
}

TEST_CASE("the gradient lives in the array's manager and closes with it") {
  NDManager m = NDManager::new_base_manager("params");
  NDArray w = m.ones({2});
  w.set_name("w");
  CHECK_FALSE(w.requires_gradient());
  w.set_requires_gradient(true);
  CHECK(w.requires_gradient());
  NDArray g = w.gradient();
  CHECK(g.manager().same(m));
  CHECK(g.name() == "w.gradient");
  w.set_requires_gradient(true);  // idempotent: still the same gradient
  CHECK(w.gradient().same(g));
  m.close();
  CHECK(g.is_closed());
}

TEST_CASE("set_requires_gradient(false) closes the gradient") {
  NDManager m = NDManager::new_base_manager("params");
  NDArray w = m.ones({2}).set_requires_gradient(true);
  NDArray g = w.gradient();
  w.set_requires_gradient(false);
  CHECK_FALSE(w.requires_gradient());
  CHECK(g.is_closed());
  CHECK_THROWS_WITH_AS(w.gradient(), doctest::Contains("does not require a gradient"), InvalidArgument);
}

TEST_CASE("gradients accumulate across backward calls until zeroed") {
  NDManager m = NDManager::new_base_manager("acc");
  NDArray x = m.create(std::vector<float>{1, 2, 3}).set_requires_gradient(true);
  {
    GradientCollector c;
    c.backward((x * x).sum());  // 2x
    c.backward((x * 3.0f).sum());  // + 3, same collector
  }
  CHECK(x.gradient().to_vector<float>() == std::vector<float>{5, 7, 9});
  {
    GradientCollector c;
    c.backward(x.sum());  // + 1, next collector
  }
  CHECK(x.gradient().to_vector<float>() == std::vector<float>{6, 8, 10});
  autograd::zero_gradients(NDList{x});
  CHECK(x.gradient().to_vector<float>() == std::vector<float>{0, 0, 0});
}

TEST_CASE("only ops inside a collector, on its thread, are recorded") {
  NDManager m = NDManager::new_base_manager("rec");
  NDArray x = m.ones({3}).set_requires_gradient(true);
  NDArray y = m.ones({3});
  NDArray outside = x * 2.0f;  // no collector: not recorded
  GradientCollector c;
  CHECK(autograd::is_recording());
  NDArray a = y * 2.0f;  // untracked input: not recorded
  CHECK(c.recorded_ops() == 0);
  NDArray b = x * 2.0f;
  CHECK(c.recorded_ops() == 1);
  NDArray cmp = x.gt(0.0f);  // comparisons are not differentiable
  NDArray idx = x.argmax();
  CHECK(c.recorded_ops() == 1);
  b.add_(1.0f);  // in place: not recorded
  x.gradient().fill_(0);
  CHECK(c.recorded_ops() == 1);
  {
    autograd::NoGradient pause;
    CHECK_FALSE(autograd::is_recording());
    NDArray d = x * 3.0f;
    CHECK(c.recorded_ops() == 1);
  }
  CHECK(autograd::is_recording());
  std::thread([&] {
    CHECK_FALSE(autograd::is_recording());
    NDArray e = x * 4.0f;  // another thread: not on this tape
  }).join();
  CHECK(c.recorded_ops() == 1);
  CHECK_THROWS_WITH_AS(c.backward(outside.sum()), doctest::Contains("was not computed, inside this GradientCollector"),
                       InvalidArgument);
}

TEST_CASE("integer results cut the graph") {
  NDManager m = NDManager::new_base_manager("int");
  NDArray x = m.create(std::vector<float>{1.5f, 2.5f}).set_requires_gradient(true);
  GradientCollector c;
  NDArray i = x.to_type(DataType::int32);
  CHECK(c.recorded_ops() == 0);
  CHECK_THROWS_WITH_AS(c.backward(i.sum()), doctest::Contains("only floating results have gradients"),
                       DTypeMismatch);
  NDArray back = i.to_type(DataType::float32);  // not connected to x any more
  CHECK_THROWS_AS(c.backward(back.sum()), InvalidArgument);
}

TEST_CASE("backward on a leaf itself, and on an intermediate that requires a gradient") {
  NDManager m = NDManager::new_base_manager("leaf");
  NDArray x = m.create(std::vector<float>{1, 2}).set_requires_gradient(true);
  GradientCollector c;
  c.backward(x);
  CHECK(x.gradient().to_vector<float>() == std::vector<float>{1, 1});
  NDArray y = x * 3.0f;
  y.set_requires_gradient(true);
  NDArray z = (y * y).sum();
  c.backward(z);
  CHECK(y.gradient().to_vector<float>() == std::vector<float>{6, 12});       // 2y
  CHECK(x.gradient().to_vector<float>() == std::vector<float>{1 + 18, 1 + 36});  // + 2y * 3
}

TEST_CASE("errors name the problem") {
  NDManager m = NDManager::new_base_manager("errors");
  NDArray i = m.zeros({2}, DataType::int32);
  CHECK_THROWS_WITH_AS(i.set_requires_gradient(true), doctest::Contains("only floating arrays"),
                       DTypeMismatch);
  NDArray x = m.ones({2});
  CHECK_THROWS_WITH_AS(x.gradient(), doctest::Contains("call set_requires_gradient(true)"), InvalidArgument);
  GradientCollector c;
  CHECK_THROWS_WITH_AS(GradientCollector(), doctest::Contains("already recording on this thread"), InvalidArgument);
  CHECK_THROWS_AS(c.backward(NDArray()), InvalidArgument);
}

TEST_CASE("a saved input closed before backward raises ArrayClosed") {
  NDManager params = NDManager::new_base_manager("params");
  NDArray w = params.ones({3}).set_requires_gradient(true);
  GradientCollector c;
  NDArray loss;
  {
    NDManager step = params.new_sub_manager("step");
    NDArray x = step.ones({3});
    loss = (x * w).sum();  // joins step
    loss.attach(params);
  }  // step closes: x (saved by the tape) is gone
  CHECK_THROWS_WITH_AS(c.backward(loss), doctest::Contains("backward"), ArrayClosed);
}

TEST_CASE("the tape keeps saved arrays alive under auto-close and releases them at the end") {
  test::AutoClose on(true);
  NDManager m = NDManager::new_base_manager("tape");
  NDArray w = m.create(std::vector<float>{1, 2, 3}).set_requires_gradient(true);
  const std::size_t before = m.array_count();  // w and its gradient
  {
    GradientCollector c;
    NDArray loss = ((w * 2.0f).exp() + 1.0f).log().sum();  // intermediates: no user handle
    gc::poll();
    CHECK(m.array_count() == before + 5);  // the tape holds them
    c.backward(loss);
    std::vector<float> g = w.gradient().to_vector<float>();
    for (int k = 0; k < 3; ++k) {
      const float e = std::exp(2.0f * float(k + 1));
      CHECK(g[std::size_t(k)] == doctest::Approx(2 * e / (e + 1)));
    }
  }
  gc::poll();
  CHECK(m.array_count() == before);  // everything the tape held is closed
}

TEST_CASE("the tape's handles are released when the collector ends (auto-close off)") {
  test::AutoClose off(false);
  NDManager m = NDManager::new_base_manager("tape");
  NDArray w = m.ones({3}).set_requires_gradient(true);
  NDArray y;
  {
    GradientCollector c;
    y = w * 2.0f;
    CHECK(y.handle_count() == 2);  // ours and the tape's
  }
  CHECK(y.handle_count() == 1);
  CHECK(w.handle_count() == 1);
}

TEST_CASE("backward leaves no arrays and no bytes behind") {
  NDManager params = NDManager::new_base_manager("params");
  NDArray w = params.random_normal({64, 32}).set_requires_gradient(true);
  NDArray b = params.zeros({32}).set_requires_gradient(true);
  NDManager step = params.new_sub_manager("step");
  NDArray x = step.random_normal({16, 64});
  GradientCollector c;
  NDArray loss = (x.matmul(w) + b).relu().log_softmax().mean();
  const std::size_t param_arrays = params.array_count(), step_arrays = step.array_count();
  const std::uint64_t bytes = test::host_bytes();
  c.backward(loss);
  CHECK(params.array_count() == param_arrays);
  CHECK(step.array_count() == step_arrays);
  CHECK(test::host_bytes() == bytes);  // every scratch gradient was freed
}

TEST_CASE("zeroing touches only the listed arrays that require gradients, whatever the manager holds") {
  // DJL 0.20 zeroed gradients by walking every array of the manager, so each
  // step got slower as arrays piled up. Here only the list is touched: an
  // array of the same manager outside the list keeps its gradient. That the
  // cost does not grow with the manager is a benchmark
  // (perf/data_debug_bench.cpp, BM_ZeroGradients), not a timed test.
  NDManager large = NDManager::new_base_manager("large");
  NDArray wl = large.ones({16}).set_requires_gradient(true);
  NDArray other = large.ones({16}).set_requires_gradient(true);
  for (int i = 0; i < 1000; ++i) large.zeros({1});
  wl.gradient().fill_(3);
  other.gradient().fill_(3);
  autograd::zero_gradients(NDList{wl, large.ones({2})});  // arrays without gradients are skipped
  CHECK(wl.gradient().sum().item<float>() == 0);
  CHECK(other.gradient().sum().item<float>() == 48);
}

TEST_CASE("two threads, each with its own collector and data") {
  auto run = [](std::uint64_t seed, std::vector<float>& out) {
    NDManager m = NDManager::new_base_manager("thread");
    std::vector<float> xs(64), ws(16);
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = float((i * 7 + seed) % 11) / 11.0f;
    for (std::size_t i = 0; i < ws.size(); ++i) ws[i] = float((i * 5 + seed) % 13) / 13.0f - 0.5f;
    NDArray w = m.create(ws, Shape{8, 2}).set_requires_gradient(true);
    NDArray x = m.create(xs, Shape{8, 8});
    for (int step = 0; step < 200; ++step) {
      GradientCollector c;
      NDArray loss = x.matmul(w).tanh().square().mean();
      c.backward(loss);
    }
    out = w.gradient().to_vector<float>();
  };
  std::vector<float> alone1, alone2, t1, t2;
  run(1, alone1);
  run(2, alone2);
  std::thread a([&] { run(1, t1); }), b([&] { run(2, t2); });
  a.join();
  b.join();
  CHECK(t1 == alone1);
  CHECK(t2 == alone2);
  CHECK(t1 != t2);
}

}  // namespace ndgc
