// Every differentiable op's gradient against central finite differences in
// float64: relative error at most 1e-6 (absolute below magnitude 1), with
// broadcasting, batched and vector operands, views and joins.
//
// Each check builds the inputs as float64 leaves, computes
// loss = sum(f(inputs) * w) with fixed random weights w (so every output
// element gets a different seed), backpropagates once, and compares each
// input's gradient with (loss(x + h) - loss(x - h)) / 2h, element by element.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>

#include <ndgc/autograd.hpp>
#include <ndgc/ndgc.hpp>

#include "gradient_check.hpp"

namespace ndgc {
namespace {

using namespace gradcheck;

const Shape s23{2, 3};

}  // namespace

TEST_CASE("gradcheck: binary ops, same shapes") {
  check({s23, s23}, [](const Inputs& x) { return x[0] + x[1]; });
  check({s23, s23}, [](const Inputs& x) { return x[0] - x[1]; });
  check({s23, s23}, [](const Inputs& x) { return x[0] * x[1]; });
  check({s23, s23}, [](const Inputs& x) { return x[0] / x[1]; }, Values::positive);
  check({s23, s23}, [](const Inputs& x) { return x[0].pow(x[1]); }, Values::positive);
  check({s23, s23}, [](const Inputs& x) { return x[0].maximum(x[1]); }, Values::distinct);
  check({s23, s23}, [](const Inputs& x) { return x[0].minimum(x[1]); }, Values::distinct);
}

TEST_CASE("gradcheck: binary ops with broadcasting") {
  const std::vector<std::pair<Shape, Shape>> pairs = {
      {{2, 3}, {3}}, {{3}, {2, 3}}, {{2, 1, 4}, {3, 1}}, {{2, 3}, {}}, {{}, {2, 3}}, {{4, 1}, {1, 5}}};
  for (const auto& pair : pairs) {  // not a structured binding: CAPTURE captures it
    const Shape& a = pair.first;
    const Shape& b = pair.second;
    CAPTURE(a.to_string());
    CAPTURE(b.to_string());
    check({a, b}, [](const Inputs& x) { return x[0] + x[1]; });
    check({a, b}, [](const Inputs& x) { return x[0] - x[1]; });
    check({a, b}, [](const Inputs& x) { return x[0] * x[1]; });
    check({a, b}, [](const Inputs& x) { return x[0] / x[1]; }, Values::positive);
    check({a, b}, [](const Inputs& x) { return x[0].pow(x[1]); }, Values::positive);
    check({a, b}, [](const Inputs& x) { return x[0].maximum(x[1]); }, Values::distinct, 7);
    check({a, b}, [](const Inputs& x) { return x[0].minimum(x[1]); }, Values::distinct, 7);
  }
}

TEST_CASE("gradcheck: scalar operands") {
  check({s23}, [](const Inputs& x) { return x[0] + 1.5; });
  check({s23}, [](const Inputs& x) { return x[0] - 1.5; });
  check({s23}, [](const Inputs& x) { return x[0] * -2.5; });
  check({s23}, [](const Inputs& x) { return x[0] / 3.0; });
  check({s23}, [](const Inputs& x) { return x[0].rsub(2.0); });
  check({s23}, [](const Inputs& x) { return x[0].rdiv(2.0); }, Values::positive);
  check({s23}, [](const Inputs& x) { return 2.0 / x[0]; }, Values::positive);
  check({s23}, [](const Inputs& x) { return x[0].pow(3.0); });
  check({s23}, [](const Inputs& x) { return x[0].pow(0.5); }, Values::positive);
  check({s23}, [](const Inputs& x) { return x[0].maximum(0.05); });
  check({s23}, [](const Inputs& x) { return x[0].minimum(0.05); });
}

TEST_CASE("gradcheck: unary ops and activations") {
  check({s23}, [](const Inputs& x) { return x[0].neg(); });
  check({s23}, [](const Inputs& x) { return -x[0]; });
  check({s23}, [](const Inputs& x) { return x[0].abs(); });
  check({s23}, [](const Inputs& x) { return x[0].exp(); });
  check({s23}, [](const Inputs& x) { return x[0].log(); }, Values::positive);
  check({s23}, [](const Inputs& x) { return x[0].sqrt(); }, Values::positive);
  check({s23}, [](const Inputs& x) { return x[0].square(); });
  check({s23}, [](const Inputs& x) { return x[0].relu(); });
  check({s23}, [](const Inputs& x) { return x[0].sigmoid(); });
  check({s23}, [](const Inputs& x) { return x[0].tanh(); });
}

TEST_CASE("gradcheck: the math functions (floor .. erf)") {
  check({s23}, [](const Inputs& x) { return x[0].mul(2.7).floor(); });  // zero away from the steps
  check({s23}, [](const Inputs& x) { return x[0].mul(2.7).ceil(); });
  check({s23}, [](const Inputs& x) { return x[0].mul(2.7).round(); });
  check({s23}, [](const Inputs& x) { return x[0].sin(); });
  check({s23}, [](const Inputs& x) { return x[0].cos(); });
  check({s23}, [](const Inputs& x) { return x[0].tan(); });
  check({s23}, [](const Inputs& x) { return x[0].mul(0.8).asin(); });
  check({s23}, [](const Inputs& x) { return x[0].mul(0.8).acos(); });
  check({s23}, [](const Inputs& x) { return x[0].atan(); });
  check({s23}, [](const Inputs& x) { return x[0].sinh(); });
  check({s23}, [](const Inputs& x) { return x[0].cosh(); });
  check({s23}, [](const Inputs& x) { return x[0].asinh(); });
  check({s23}, [](const Inputs& x) { return x[0].add(1.0).acosh(); }, Values::positive);
  check({s23}, [](const Inputs& x) { return x[0].mul(0.8).atanh(); });
  check({s23}, [](const Inputs& x) { return x[0].erf(); });
}

TEST_CASE("gradcheck: reductions") {
  const Shape s{2, 3, 4};
  check({s}, [](const Inputs& x) { return x[0].sum(); });
  check({s}, [](const Inputs& x) { return x[0].sum({1}); });
  check({s}, [](const Inputs& x) { return x[0].sum({0, 2}, true); });
  check({s}, [](const Inputs& x) { return x[0].sum({-1}); });
  check({s}, [](const Inputs& x) { return x[0].mean(); });
  check({s}, [](const Inputs& x) { return x[0].mean({0}); });
  check({s}, [](const Inputs& x) { return x[0].mean({1, 2}, true); });
  check({s}, [](const Inputs& x) { return x[0].max(); }, Values::distinct);
  check({s}, [](const Inputs& x) { return x[0].max({1}); }, Values::distinct);
  check({s}, [](const Inputs& x) { return x[0].max({0, 2}, true); }, Values::distinct);
  check({s}, [](const Inputs& x) { return x[0].min(); }, Values::distinct);
  check({s}, [](const Inputs& x) { return x[0].min({2}); }, Values::distinct);
}

TEST_CASE("gradcheck: max shares the gradient among ties") {
  NDManager m = NDManager::new_base_manager("ties");
  NDArray x = m.create(std::vector<double>{1, 3, 3, 2}).set_requires_gradient(true);
  GradientCollector c;
  c.backward(x.max());
  CHECK(x.gradient().to_vector<double>() == std::vector<double>{0, 0.5, 0.5, 0});
}

TEST_CASE("gradcheck: matmul") {
  const std::vector<std::pair<Shape, Shape>> pairs = {
      {{2, 3}, {3, 4}},          // matrices
      {{3}, {3, 4}},             // vector on the left
      {{2, 3}, {3}},             // vector on the right
      {{3}, {3}},                // dot product
      {{2, 3, 4}, {4, 5}},       // batched, broadcast right operand (Note [Stacked rows])
      {{4, 1, 3}, {3, 5}},       // one row a batch, broadcast right operand
      {{4, 5}, {2, 5, 3}},       // broadcast left operand
      {{2, 3, 4}, {2, 4, 5}},    // batched both
      {{2, 1, 3, 4}, {3, 4, 2}}  // broadcast batch axes
  };
  for (const auto& pair : pairs) {  // not a structured binding: CAPTURE captures it
    const Shape& a = pair.first;
    const Shape& b = pair.second;
    CAPTURE(a.to_string());
    CAPTURE(b.to_string());
    check({a, b}, [](const Inputs& x) { return x[0].matmul(x[1]); });
  }
  // Transposed (strided) operands.
  check({{3, 2}, {4, 3}}, [](const Inputs& x) { return x[0].transpose().matmul(x[1].transpose()); });
  // Batches whose rows do not stack, by a shared matrix.
  check({{3, 2, 4}, {4, 5}}, [](const Inputs& x) { return x[0].permute({1, 0, 2}).matmul(x[1]); });
}

TEST_CASE("gradcheck: linear, fused and composed") {
  // Fused: x and the weight matrices, bias [units] (Note [Fused linear]).
  check({{5, 3}, {3, 4}, {4}}, [](const Inputs& x) { return linear(x[0], x[1], x[2]); });
  // Fused over strided operands: a transposed input and weight.
  check({{3, 5}, {4, 3}, {4}},
        [](const Inputs& x) { return linear(x[0].transpose(), x[1].transpose(), x[2]); });
  // Fused over batch axes whose rows stack: a sequence, one row a batch (Note [Stacked rows]).
  check({{2, 5, 3}, {3, 4}, {4}}, [](const Inputs& x) { return linear(x[0], x[1], x[2]); });
  check({{6, 1, 3}, {3, 4}, {4}}, [](const Inputs& x) { return linear(x[0], x[1], x[2]); });
  // Composed: batch axes that do not stack, a vector input, a [1, units] bias.
  check({{5, 2, 3}, {3, 4}, {4}}, [](const Inputs& x) { return linear(x[0].permute({1, 0, 2}), x[1], x[2]); });
  check({{3}, {3, 4}, {4}}, [](const Inputs& x) { return linear(x[0], x[1], x[2]); });
  check({{5, 3}, {3, 4}, {1, 4}}, [](const Inputs& x) { return linear(x[0], x[1], x[2]); });
}

TEST_CASE("gradcheck: views") {
  const Shape s{2, 3, 4};
  check({s}, [](const Inputs& x) { return x[0].reshape({6, 4}); });
  check({s}, [](const Inputs& x) { return x[0].reshape({4, -1}); });
  check({s}, [](const Inputs& x) { return x[0].flatten(); });
  check({{2, 1, 3}}, [](const Inputs& x) { return x[0].squeeze(); });
  check({{2, 1, 3}}, [](const Inputs& x) { return x[0].squeeze({1}); });
  check({s}, [](const Inputs& x) { return x[0].expand_dims(1); });
  check({s}, [](const Inputs& x) { return x[0].expand_dims(-1); });
  check({s}, [](const Inputs& x) { return x[0].permute({2, 0, 1}); });
  check({s}, [](const Inputs& x) { return x[0].transpose(); });
  check({s}, [](const Inputs& x) { return x[0].swap_axes(0, 2); });
  // Reshape of a non-contiguous view copies.
  check({s}, [](const Inputs& x) { return x[0].transpose().reshape({12, 2}); });
  check({{3}}, [](const Inputs& x) { return x[0].broadcast_to({2, 3}); });
  check({{2, 1}}, [](const Inputs& x) { return x[0].broadcast_to({3, 2, 4}); });
  check({s}, [](const Inputs& x) { return x[0].get("1"); });
  check({s}, [](const Inputs& x) { return x[0].get(":, 1:3"); });
  check({s}, [](const Inputs& x) { return x[0].get("..., ::2"); });
  check({s}, [](const Inputs& x) { return x[0].get("-1, :, 1"); });
  check({s}, [](const Inputs& x) { return x[0].get(NDIndex().add_slice(std::nullopt, std::nullopt).add_index(-2)); });
  // A view of a view.
  check({s}, [](const Inputs& x) { return x[0].transpose().get("1:, 0"); });
}

TEST_CASE("gradcheck: concat and stack") {
  check({{2, 3}, {1, 3}}, [](const Inputs& x) { return x[0].concat(x[1], 0); });
  check({{2, 3}, {2, 2}, {2, 1}}, [](const Inputs& x) { return concat(NDList{x[0], x[1], x[2]}, 1); });
  check({{2, 3}, {2, 3}}, [](const Inputs& x) { return stack(NDList{x[0], x[1]}, 0); });
  check({{2, 3}, {2, 3}, {2, 3}}, [](const Inputs& x) { return stack(NDList{x[0], x[1], x[2]}, -1); });
  check({{2, 3}, {2, 3}}, [](const Inputs& x) { return stack(NDList{x[0], x[1]}, 1); });
}

TEST_CASE("gradcheck: softmax and log_softmax") {
  check({{3, 4}}, [](const Inputs& x) { return x[0].softmax(); });
  check({{3, 4}}, [](const Inputs& x) { return x[0].softmax(0); });
  check({{2, 3, 4}}, [](const Inputs& x) { return x[0].softmax(1); });
  check({{3, 4}}, [](const Inputs& x) { return x[0].log_softmax(); });
  check({{3, 4}}, [](const Inputs& x) { return x[0].log_softmax(0); });
  check({{2, 3, 4}}, [](const Inputs& x) { return x[0].log_softmax(1); });
}

TEST_CASE("gradcheck: where, to_type, dup and contiguous") {
  check({{2, 3}, {2, 3}}, [](const Inputs& x) { return where(x[0].gt(x[1]), x[0] * 2.0, x[1].square()); });
  check({{2, 3}, {3}}, [](const Inputs& x) { return where(x[0].gt(0.0), x[0], x[1]); });
  check({{2, 3}, {}}, [](const Inputs& x) { return where(x[0].lt(0.0), x[1], x[0]); });
  check({s23}, [](const Inputs& x) { return x[0].to_type(DataType::float64); });
  check({s23}, [](const Inputs& x) { return x[0].dup(); });
  check({s23}, [](const Inputs& x) { return x[0].transpose().contiguous(); });
}

TEST_CASE("gradcheck: compositions") {
  // An input used twice, a diamond, and a small network with a loss.
  check({s23}, [](const Inputs& x) { return x[0] * x[0]; });
  check({s23}, [](const Inputs& x) {
    NDArray y = x[0].tanh();
    return y * y.exp() + y;
  });
  check({{4, 3}, {3, 5}, {5}}, [](const Inputs& x) {
    NDArray h = (x[0].matmul(x[1]) + x[2]).relu();
    return h.log_softmax().mean({1});
  });
  check({{4, 3}, {4, 3}}, [](const Inputs& x) { return (x[0] - x[1]).square().mean() * 0.5; });
  check({{4, 3}, {4, 3}}, [](const Inputs& x) { return (x[0] - x[1]).abs().mean(); });
}

TEST_CASE("gradcheck: float32 gradients flow through casts") {
  NDManager m = NDManager::new_base_manager("cast");
  NDArray x = m.create(std::vector<double>{1, 2, 3}).set_requires_gradient(true);
  GradientCollector c;
  NDArray y = x.to_type(DataType::float32) * 2.0;
  c.backward(y.sum());
  CHECK(x.gradient().to_vector<double>() == std::vector<double>{2, 2, 2});
}

}  // namespace ndgc
