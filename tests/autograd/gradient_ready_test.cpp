// GradientCollector::backward's watch (Note [Gradient ready] in
// src/autograd/backward.cpp): each watched array is reported once, only when
// its gradient is final (a shared weight after its last use), in the order
// gradients complete; arrays off the tape at the end; gradients unchanged.
#include <doctest/doctest.h>

#include <vector>

#include "test_util.hpp"

namespace ndgc {
namespace {

struct ReadyNet {
  NDManager m = NDManager::new_base_manager("ready");
  NDArray x, w1, w2, unused;
  ReadyNet() {
    set_random_seed(3);
    x = m.random_normal({5, 4});
    w1 = m.random_normal({4, 3}).set_requires_gradient(true);
    w2 = m.random_normal({3, 2}).set_requires_gradient(true);
    unused = m.random_normal({2}).set_requires_gradient(true);
  }
  // w1 feeds two nodes: the first matmul, and a penalty recorded after w2's matmul.
  NDArray loss() const { return x.matmul(w1).relu().matmul(w2).sum() + w1.square().sum(); }
};

}  // namespace

TEST_CASE("gradient ready: once per watched array, when its gradient is final, in completion order") {
  ReadyNet net;
  const NDList watched{net.w2, net.w1, net.unused};
  std::vector<std::size_t> order;
  std::vector<std::vector<float>> at_ready(watched.size());
  {
    GradientCollector c;
    c.backward(net.loss(), watched, [&](std::size_t i) {
      order.push_back(i);
      at_ready[i] = watched[i].gradient().to_vector<float>();
    });
  }
  // w2's last (only) use is met before w1's first use; the unused array at the end.
  CHECK(order == std::vector<std::size_t>{0, 1, 2});
  for (std::size_t i = 0; i < watched.size(); ++i) {
    CAPTURE(i);
    CHECK(at_ready[i] == watched[i].gradient().to_vector<float>());  // nothing added after the report
  }

  // The same gradients as a pass without a watch.
  ReadyNet plain;
  {
    GradientCollector c;
    c.backward(plain.loss());
  }
  CHECK(plain.w1.gradient().to_vector<float>() == net.w1.gradient().to_vector<float>());
  CHECK(plain.w2.gradient().to_vector<float>() == net.w2.gradient().to_vector<float>());
}

TEST_CASE("gradient ready: a target that is itself a leaf, an array watched twice, an empty watch") {
  ReadyNet net;
  std::vector<std::size_t> order;
  {
    GradientCollector c;
    c.backward(net.unused, NDList{net.unused, net.w1}, [&](std::size_t i) { order.push_back(i); });
  }
  CHECK(order == std::vector<std::size_t>{0, 1});
  order.clear();
  {
    GradientCollector c;
    c.backward(net.loss(), NDList{net.w1, net.w1}, [&](std::size_t i) { order.push_back(i); });
  }
  CHECK(order.size() == 2);
  {
    GradientCollector c;
    c.backward(net.loss(), NDList{}, [&](std::size_t) { FAIL("nothing is watched"); });
  }
}

TEST_CASE("gradient ready: an exception from the callback ends backward and propagates; the next pass works") {
  ReadyNet net;
  {
    GradientCollector c;
    CHECK_THROWS_WITH_AS(c.backward(net.loss(), NDList{net.w2},
                                    [](std::size_t) { throw InvalidArgument("ready: refused by the test"); }),
                         doctest::Contains("refused by the test"), InvalidArgument);
  }
  autograd::zero_gradients(NDList{net.w1, net.w2});
  std::size_t calls = 0;
  {
    GradientCollector c;
    c.backward(net.loss(), NDList{net.w2}, [&](std::size_t) { ++calls; });
  }
  CHECK(calls == 1);
  // backward's own errors come first: nothing is reported.
  {
    GradientCollector c;
    NDArray not_recorded = net.m.ones({2});
    CHECK_THROWS_AS(c.backward(not_recorded, NDList{net.w2}, [&](std::size_t) { ++calls; }), InvalidArgument);
  }
  CHECK(calls == 1);
}

}  // namespace ndgc
