// The tape's record (Note [A lean record] in ops/record.hpp): a node holds the
// fields every op shares, and what only get, permute, conv2d, the pools and
// dropout need lives in the tape's side table, one entry per such op, which
// their gradient rules read back.
#include <doctest/doctest.h>

#include <vector>

#include <ndgc/autograd.hpp>
#include <ndgc/ndgc.hpp>

#include "autograd/rule.hpp"
#include "autograd/tape.hpp"
#include "death.hpp"
#include "support/assert.hpp"

namespace ndgc {

TEST_CASE("a tape node is as small as the fields every op shares") {
  // The NDIndex alone is 512 bytes; the record held it until issue 41.
  CHECK(sizeof(ops::OpRecord) <= 32);
  CHECK(sizeof(autograd::detail::Node) <= 128);
}

TEST_CASE("get, permute, conv2d, the pools and dropout keep one detail each; other ops none") {
  NDManager m = NDManager::new_base_manager("details");
  NDArray x = m.arange(0.0f, 16.0f).reshape({1, 1, 4, 4}).set_requires_gradient(true);
  NDArray w = m.ones({1, 1, 2, 2}).set_requires_gradient(true);
  NDArray b = m.zeros({1}).set_requires_gradient(true);
  GradientCollector c;
  const autograd::detail::Tape& tape = *autograd::detail::Tape::current();
  NDArray y = (x * 2.0f).relu();  // two ops without a detail
  CHECK(tape.details() == 0);
  NDArray conv = conv2d(y, w, b);                      // [1, 1, 3, 3]
  NDArray pooled = max_pool2d(conv, {2, 2}, {1, 1});   // [1, 1, 2, 2]
  NDArray avg = avg_pool2d(conv, {3, 3}, {1, 1});      // [1, 1, 1, 1]
  NDArray dropped = dropout(pooled, 0.5, true);
  NDArray picked = dropped.get(":, :, 0, :");          // [1, 1, 2]
  NDArray turned = picked.permute({2, 1, 0});           // [2, 1, 1]
  CHECK(tape.details() == 6);
  CHECK(tape.size() == 8);
  c.backward(turned.sum() + avg.sum());
  // The rules read their details back: the pool's window routes the gradient
  // to the window's maximum, get's index to row 0 only, and so on; x's
  // gradient is nonzero and finite, and the conv's weight got one.
  CHECK(x.gradient().abs().sum().item<float>() > 0);
  CHECK(w.gradient().abs().sum().item<float>() > 0);
  CHECK(std::isfinite(x.gradient().sum().item<float>()));
}

TEST_CASE("the next tape on the thread starts with an empty side table") {
  NDManager m = NDManager::new_base_manager("details");
  NDArray x = m.ones({2, 3}).set_requires_gradient(true);
  for (int step = 0; step < 3; ++step) {
    GradientCollector c;
    CHECK(autograd::detail::Tape::current()->details() == 0);
    NDArray y = x.permute({1, 0}).get("0:2");
    CHECK(autograd::detail::Tape::current()->details() == 2);
    c.backward(y.sum());
  }
  // Three backward passes, each adding a gradient of 1 at the two rows kept.
  CHECK(x.gradient().to_vector<float>() == std::vector<float>{3, 3, 0, 3, 3, 0});
}

// A rule reading a detail its op did not record would read garbage.
TEST_CASE("a rule that reads a detail its node lacks is a broken invariant" * doctest::skip(!NDGC_ASSERTIONS_ON)) {
  const test::Death d = test::run_in_child([] {
    using namespace autograd::detail;
    const Node node(ops::OpRecord{.kind = ops::OpKind::max_pool2d}, {}, nullptr, NDArray());
    std::vector<Scratch> out;
    const Rule r{node, nullptr, Scratch(Shape{1}, DataType::float32, Device::cpu()), out};
    (void)r.detail<ops::Window2d>();
  });
  CHECK(d.stopped);
  CHECK(d.stderr_text.find("OpDetail") != std::string::npos);
}

}  // namespace ndgc
