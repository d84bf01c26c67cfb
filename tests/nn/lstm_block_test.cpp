// nn::LSTM (src/nn/lstm_block.cpp): parameter names and shapes, initial values,
// forward with and without a state (the op's results), gradients reaching
// every parameter, describe(), errors naming the block, and a Model
// save/load round trip.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <unistd.h>

#include <ndgc/model.hpp>
#include <ndgc/ndgc.hpp>

namespace ndgc {
namespace {

std::vector<double> ramp(std::int64_t n, double scale) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = std::sin(double(i) * scale);
  return v;
}

}  // namespace

TEST_CASE("LSTM block: parameters named per layer, with PyTorch's shapes as x.matmul(w)") {
  NDManager m = NDManager::new_base_manager("lstm-block");
  nn::LSTM block(4, 2);
  CHECK(block.describe() == "LSTM(? -> 4, 2 layers)");
  CHECK(block.initialize(m, Shape{3, 5, 6}) == Shape{3, 5, 4});
  CHECK(block.describe() == "LSTM(6 -> 4, 2 layers)");
  const nn::ParameterList params = block.parameters();
  REQUIRE(params.size() == 6);
  const std::vector<std::pair<std::string, Shape>> want = {
      {"l0.weight_ih", {6, 16}}, {"l0.weight_hh", {4, 16}}, {"l0.bias", {16}},
      {"l1.weight_ih", {4, 16}}, {"l1.weight_hh", {4, 16}}, {"l1.bias", {16}},
  };
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(want[i].first);
    CHECK(params[i].name == want[i].first);
    CHECK(params[i].parameter->array().shape() == want[i].second);
    CHECK(params[i].parameter->array().requires_gradient());
  }
  for (double v : params[2].parameter->array().to_vector<double>()) CHECK(v == 0);  // bias zeros
  double spread = 0;
  for (double v : params[0].parameter->array().to_vector<double>()) spread += std::abs(v);
  CHECK(spread > 0);  // weights from the default initializer
  CHECK(nn::LSTM(128).describe() == "LSTM(? -> 128, 1 layer)");
  nn::LSTM mnist(128);
  mnist.initialize(m, Shape{32, 28, 28});
  CHECK(mnist.describe() == "LSTM(28 -> 128, 1 layer)");
}

TEST_CASE("LSTM block: forward is ndgc::lstm over its parameters, with and without h0/c0") {
  NDManager m = NDManager::new_base_manager("lstm-block");
  nn::LSTM block(3, 2);
  block.initialize(m, Shape{2, 4, 5}, DataType::float64);
  NDList weights = block.parameter_arrays();
  NDArray x = m.create(ramp(40, 0.3), {2, 4, 5});
  NDArray h0 = m.create(ramp(12, 0.7), {2, 2, 3}), c0 = m.create(ramp(12, 1.1), {2, 2, 3});
  for (const NDList& inputs : {NDList{x}, NDList{x, h0, c0}}) {
    const NDList got = block.forward(inputs);
    const NDList want = inputs.size() == 1 ? lstm(x, weights) : lstm(x, weights, h0, c0);
    REQUIRE(got.size() == 3);
    CHECK(got[0].shape() == Shape{2, 4, 3});
    CHECK(got[1].shape() == Shape{2, 2, 3});
    CHECK(got[2].shape() == Shape{2, 2, 3});
    for (std::size_t i = 0; i < 3; ++i) CHECK(got[i].to_vector<double>() == want[i].to_vector<double>());
  }
  CHECK(block.forward(NDList{x})[0].to_vector<double>() != block.forward(NDList{x, h0, c0})[0].to_vector<double>());
}

TEST_CASE("LSTM block: a backward pass reaches every parameter") {
  NDManager m = NDManager::new_base_manager("lstm-block");
  nn::LSTM block(3, 2);
  block.initialize(m, Shape{2, 4, 5});
  NDArray x = m.create(ramp(40, 0.3), {2, 4, 5}).to_type(DataType::float32);
  {
    GradientCollector collector;
    const NDList out = block.forward(NDList{x});
    collector.backward(out[0].sum().add(out[2].sum()));
  }
  for (const nn::NamedParameter& p : block.parameters()) {
    CAPTURE(p.name);
    double total = 0;
    for (double v : p.parameter->array().gradient().to_vector<double>()) total += std::abs(v);
    CHECK(total > 0);
  }
}

TEST_CASE("LSTM block: errors name the block") {
  NDManager m = NDManager::new_base_manager("lstm-block");
  CHECK_THROWS_WITH_AS(nn::LSTM(0), doctest::Contains("LSTM: hidden_size must be positive, not 0"), InvalidArgument);
  CHECK_THROWS_WITH_AS(nn::LSTM(4, 0), doctest::Contains("LSTM: num_layers must be positive"), InvalidArgument);
  nn::LSTM block(4);
  CHECK_THROWS_WITH_AS(block.initialize(m, Shape{3, 6}), doctest::Contains("LSTM: the input shape (3, 6) has rank 2"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(block.output_shape(Shape{3, 6}), doctest::Contains("LSTM"), InvalidArgument);
  CHECK_FALSE(block.is_initialized());
  block.initialize(m, Shape{2, 3, 6});
  NDArray x = m.ones({2, 3, 6});
  CHECK_THROWS_WITH_AS(block.forward(NDList{x, m.zeros({1, 2, 4})}),
                       doctest::Contains("LSTM: takes {x} or {x, h0, c0}"), InvalidArgument);
  CHECK_THROWS_WITH_AS(block.forward(NDList{m.ones({2, 3, 5})}), doctest::Contains("has F = 5 features"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(block.forward(NDList{x, m.zeros({1, 2, 4}), m.zeros({2, 2, 4})}), doctest::Contains("c0"),
                       ShapeMismatch);
}

TEST_CASE("LSTM block: Model save and load round trip") {
  const auto file = std::filesystem::temp_directory_path() / ("ndgc_lstm_block_" + std::to_string(::getpid()));
  set_random_seed(5);
  Model a("a", std::make_unique<nn::LSTM>(4, 2));
  a.initialize(Shape{2, 3, 5});
  a.save(file);
  Model b("b", std::make_unique<nn::LSTM>(4, 2));  // uninitialized: load creates the parameters
  b.load(file);
  std::filesystem::remove(file);
  REQUIRE(b.parameters().size() == 6);
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(b.parameters()[i].name == a.parameters()[i].name);
    CHECK(b.parameters()[i].parameter->array().to_vector<float>() ==
          a.parameters()[i].parameter->array().to_vector<float>());
  }
  NDManager m = NDManager::new_base_manager("lstm-block");
  NDArray x = m.create(ramp(30, 0.4), {2, 3, 5}).to_type(DataType::float32);
  CHECK(a.block().forward(NDList{x})[0].to_vector<float>() == b.block().forward(NDList{x})[0].to_vector<float>());
}

}  // namespace ndgc
