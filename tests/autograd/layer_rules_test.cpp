// Gradients of the layer ops (src/autograd/layer_rules.cpp) against central
// finite differences in float64, the harness of gradient_check_test.cpp:
// stride, padding, dilation, groups, uneven shapes and views for conv2d;
// both pools; GELU; dropout (its mask redrawn from the seed); embedding with
// repeated indices; layer_norm over one and two axes; batch_norm training
// and evaluation; the LSTM cell, and lstm() end to end (x, h0, c0, weights,
// bias; one and two layers).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <ndgc/autograd.hpp>
#include <ndgc/ndgc.hpp>

#include "autograd/layer_rules.hpp"
#include "death.hpp"
#include "gradient_check.hpp"
#include "support/assert.hpp"

namespace ndgc {

using namespace gradcheck;

TEST_CASE("gradcheck: conv2d") {
  check({{2, 3, 5, 4}, {4, 3, 3, 2}, {4}}, [](const Inputs& x) { return conv2d(x[0], x[1], x[2]); });
  check({{1, 2, 6, 7}, {3, 2, 2, 3}}, [](const Inputs& x) {
    return conv2d(x[0], x[1], NDArray{}, {2, 1}, {1, 2}, {1, 2});
  });
  check({{2, 4, 5, 5}, {6, 2, 3, 2}, {6}}, [](const Inputs& x) {
    return conv2d(x[0], x[1], x[2], {1, 2}, {1, 0}, {2, 1}, 2);
  });
  check({{1, 3, 4, 4}, {3, 1, 3, 3}}, [](const Inputs& x) {
    return conv2d(x[0], x[1], NDArray{}, {1, 1}, {1, 1}, {1, 1}, 3);  // depthwise
  });
  // views: x transposed in its spatial axes, the weight permuted
  check({{1, 2, 4, 3}, {3, 2, 2, 2}, {6}}, [](const Inputs& x) {
    return conv2d(x[0].transpose({0, 1, 3, 2}), x[1], x[2].get("::2"), {1, 1}, {0, 1});
  });
}

TEST_CASE("gradcheck: conv2d with a weight stored transposed") {
  check({{1, 2, 4, 4}, {2, 2, 3, 3}}, [](const Inputs& x) {
    // the weight seen through a permutation of its own: not contiguous
    return conv2d(x[0], x[1].transpose({0, 1, 3, 2}), NDArray{}, {2, 2}, {1, 1});
  });
}

TEST_CASE("gradcheck: max_pool2d and avg_pool2d") {
  check({{2, 2, 5, 4}}, [](const Inputs& x) { return max_pool2d(x[0], {2, 2}, {2, 1}); }, Values::distinct);
  check({{1, 2, 5, 5}}, [](const Inputs& x) { return max_pool2d(x[0], {3, 2}, {2, 2}, {1, 1}); }, Values::distinct);
  check({{2, 2, 5, 4}}, [](const Inputs& x) { return avg_pool2d(x[0], {2, 3}, {1, 2}); });
  check({{1, 3, 4, 5}}, [](const Inputs& x) { return avg_pool2d(x[0], {3, 3}, {2, 2}, {1, 1}); });
  check({{1, 2, 4, 6}}, [](const Inputs& x) { return avg_pool2d(x[0].transpose({0, 1, 3, 2}), {2, 2}, {2, 2}); });
  // 2x2 at stride 2, the CPU engine's max-pool fast path (odd sizes: a row and a column no window reaches)
  check({{2, 2, 5, 7}}, [](const Inputs& x) { return max_pool2d(x[0], {2, 2}, {2, 2}); }, Values::distinct);
}

TEST_CASE("gradcheck: gelu") {
  check({{3, 4}}, [](const Inputs& x) { return x[0].mul(2.0).gelu(); });
  check({{3, 4}}, [](const Inputs& x) { return x[0].transpose().gelu(); });
}

TEST_CASE("gradcheck: dropout redraws its mask from the seed") {
  check({{6, 7}}, [](const Inputs& x) {
    set_random_seed(11);
    return dropout(x[0], 0.4, true);
  });
  check({{6, 7}}, [](const Inputs& x) {
    set_random_seed(12);
    return dropout(x[0].transpose(), 0.3, true).mul(x[0].transpose());
  });
  check({{2, 3}}, [](const Inputs& x) { return dropout(x[0], 0.5, false); });
}

TEST_CASE("gradcheck: embedding with repeated indices") {
  check({{5, 3}}, [](const Inputs& x) {
    NDArray idx = x[0].manager().create(std::vector<double>{4, 1, 4, 0, 4, 1}, {2, 3}).to_type(DataType::int64);
    return embedding(idx, x[0]);
  });
}

TEST_CASE("embedding: repeated indices add their gradients") {
  NDManager m = NDManager::new_base_manager("embedding-grad");
  NDArray w = m.zeros({4, 2}, DataType::float64);
  w.set_requires_gradient(true);
  NDArray idx = m.create(std::vector<double>{1, 3, 1, 1}, {4}).to_type(DataType::int32);
  {
    GradientCollector collector;
    NDArray y = embedding(idx, w);
    NDArray weights = m.create(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
    collector.backward(y.mul(weights).sum());
  }
  CHECK(w.gradient().to_vector<double>() == std::vector<double>{0, 0, 1 + 5 + 7, 2 + 6 + 8, 0, 0, 3, 4});
}

TEST_CASE("gradcheck: layer_norm") {
  check({{3, 5}, {5}, {5}}, [](const Inputs& x) { return layer_norm(x[0], x[1], x[2]); });
  check({{2, 3, 4}, {3, 4}, {3, 4}}, [](const Inputs& x) { return layer_norm(x[0], x[1], x[2], 1e-3); });
  check({{4, 3}, {4}, {4}}, [](const Inputs& x) { return layer_norm(x[0].transpose(), x[1], x[2]); });
}

TEST_CASE("gradcheck: batch_norm, training and evaluation") {
  auto stats = [](const NDArray& like, double base) {
    const std::int64_t c = like.shape()[1];
    std::vector<double> v(static_cast<std::size_t>(c));
    for (std::int64_t i = 0; i < c; ++i) v[std::size_t(i)] = base + 0.1 * double(i);
    return like.manager().create(v, {c});
  };
  check({{3, 2, 2, 3}, {2}, {2}}, [&](const Inputs& x) {
    return batch_norm(x[0], x[1], x[2], stats(x[0], 0), stats(x[0], 1), true);
  });
  check({{4, 3}, {3}, {3}}, [&](const Inputs& x) {
    return batch_norm(x[0], x[1], x[2], stats(x[0], 0), stats(x[0], 1), true, 0.1, 1e-3);
  });
  check({{2, 3, 4}, {3}, {3}}, [&](const Inputs& x) {
    return batch_norm(x[0], x[1], x[2], stats(x[0], 0.2), stats(x[0], 0.7), false);
  });
  check({{3, 2, 4}, {2}, {2}}, [&](const Inputs& x) {  // a view as x
    NDArray t = x[0].transpose({2, 1, 0});
    return batch_norm(t, x[1], x[2], stats(t, 0), stats(t, 1), true);
  });
}

TEST_CASE("gradcheck: lstm_cell") {
  check({{2, 12}, {2, 12}, {2, 3}}, [](const Inputs& x) { return lstm_cell(x[0], x[1], x[2]); });
  // one leaf feeds both gate inputs (their gradients add); a constant needs none
  check({{3, 8}, {3, 2}}, [](const Inputs& x) { return lstm_cell(x[0], x[0].mul(0.5), x[1]); });
  check({{1, 8}, {1, 2}}, [](const Inputs& x) {
    return lstm_cell(x[0], x[0].manager().zeros({1, 8}, DataType::float64), x[1]);
  });
  // views: the gates a step of a [B, T, 4H] array, c transposed
  check({{2, 3, 8}, {2, 8}, {2, 2}}, [](const Inputs& x) {
    return lstm_cell(x[0].get(":, 1, :"), x[1], x[2].transpose());
  });
}

namespace {
NDArray all_outputs(const NDList& out) {
  return concat(NDList{out[0].reshape({-1}), out[1].reshape({-1}), out[2].reshape({-1})});
}
}  // namespace

TEST_CASE("gradcheck: lstm, x, h0, c0, weights and bias") {
  // x [2, 3, 4], H = 3, one layer with h0 and c0
  check({{2, 3, 4}, {4, 12}, {3, 12}, {12}, {1, 2, 3}, {1, 2, 3}}, [](const Inputs& x) {
    return all_outputs(lstm(x[0], NDList{x[1], x[2], x[3]}, x[4], x[5]));
  });
  // two layers of H = 2 from a zero state, x [1, 3, 3]
  check({{1, 3, 3}, {3, 8}, {2, 8}, {8}, {2, 8}, {2, 8}, {8}}, [](const Inputs& x) {
    return all_outputs(lstm(x[0], NDList{x[1], x[2], x[3], x[4], x[5], x[6]}));
  });
  // only h0, then only c0 (the other half of the initial state zeros), x a view stored [T, B, F]
  check({{3, 2, 4}, {4, 12}, {3, 12}, {12}, {1, 2, 3}}, [](const Inputs& x) {
    return all_outputs(lstm(x[0].transpose({1, 0, 2}), NDList{x[1], x[2], x[3]}, x[4], NDArray{}));
  });
  check({{2, 4, 3}, {3, 8}, {2, 8}, {8}, {1, 2, 2}}, [](const Inputs& x) {
    return all_outputs(lstm(x[0], NDList{x[1], x[2], x[3]}, NDArray{}, x[4]));
  });
  // a constant initial state needs no gradient; one step only
  check({{2, 1, 3}, {3, 8}, {2, 8}, {8}}, [](const Inputs& x) {
    const NDArray s = x[0].manager().create(std::vector<double>{0.3, -0.2, 0.5, 0.1}, {1, 2, 2});
    return all_outputs(lstm(x[0], NDList{x[1], x[2], x[3]}, s, s.mul(2.0)));
  });
}

}  // namespace ndgc

// layer_gradients is dispatched only for layer op kinds; a node of any other
// kind would silently get no gradient, so it is a broken invariant.
TEST_CASE("layer_gradients: a node of a non-layer op kind is a broken invariant" *
          doctest::skip(!NDGC_ASSERTIONS_ON)) {
  const ndgc::test::Death d = ndgc::test::run_in_child([] {
    using namespace ndgc::autograd::detail;
    const Node node(ndgc::ops::OpRecord{.kind = ndgc::ops::OpKind::binary}, {}, nullptr, ndgc::NDArray());
    std::vector<Scratch> out;
    Rule r{node, nullptr, Scratch(ndgc::Shape{1}, ndgc::DataType::float32, ndgc::Device::cpu()), out};
    layer_gradients(r);
  });
  CHECK(d.stopped);
  CHECK(d.stderr_text.find("no layer rule") != std::string::npos);
}
