// Blocks, parameters and initializers: shapes, names, managers, seeding.
#include <doctest/doctest.h>

#include <cmath>

#include <ndgc/autograd.hpp>
#include <ndgc/ndgc.hpp>
#include <ndgc/nn.hpp>

namespace ndgc {

TEST_CASE("Linear: shapes, parameters in the given manager, forward joins the input's manager") {
  NDManager model = NDManager::new_base_manager("model");
  nn::Linear linear(4);
  CHECK_FALSE(linear.is_initialized());
  CHECK(linear.initialize(model, Shape{2, 3}) == Shape{2, 4});
  CHECK(linear.is_initialized());
  CHECK(linear.weight().array().shape() == Shape{3, 4});
  CHECK(linear.bias()->array().shape() == Shape{4});
  CHECK(linear.weight().array().manager().same(model));
  CHECK(linear.weight().array().requires_gradient());
  CHECK(linear.bias()->array().to_vector<float>() == std::vector<float>(4, 0.0f));
  CHECK(linear.describe() == "Linear(3 -> 4)");

  NDManager step = model.new_sub_manager("step");
  NDArray x = step.ones({2, 3});
  const std::size_t model_arrays = model.array_count();
  NDArray y = linear.forward(NDList{x}).head();
  CHECK(y.shape() == Shape{2, 4});
  CHECK(y.manager().same(step));
  CHECK(model.array_count() == model_arrays);  // nothing joined the model's manager
  // y = x w + b with x = ones: column sums of w.
  std::vector<float> w = linear.weight().array().to_vector<float>(), out = y.to_vector<float>();
  for (int j = 0; j < 4; ++j) CHECK(out[std::size_t(j)] == doctest::Approx(w[std::size_t(j)] + w[std::size_t(4 + j)] + w[std::size_t(8 + j)]));
  CHECK_THROWS_WITH_AS(nn::Linear(0), doctest::Contains("units must be positive"), InvalidArgument);
}

TEST_CASE("Mlp: layers, names, output shape, batch flattening") {
  NDManager model = NDManager::new_base_manager("model");
  nn::Mlp mlp(784, 10, {128, 64});
  CHECK(mlp.output_shape(Shape{32, 784}) == Shape{32, 10});
  CHECK(mlp.initialize(model, Shape{32, 784}) == Shape{32, 10});
  std::vector<std::string> names;
  std::int64_t count = 0;
  for (const auto& p : mlp.parameters()) {
    names.push_back(p.name);
    count += p.parameter->array().size();
  }
  CHECK(names == std::vector<std::string>{"1.weight", "1.bias", "3.weight", "3.bias", "5.weight", "5.bias"});
  CHECK(count == 784 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10);
  CHECK(mlp.parameter_arrays().size() == 6);
  NDManager step = model.new_sub_manager("step");
  CHECK(mlp.forward(NDList{step.ones({5, 784})}).head().shape() == Shape{5, 10});
  CHECK(mlp.forward(NDList{step.ones({5, 28, 28})}).head().shape() == Shape{5, 10});  // flattened
  CHECK(mlp.describe().find("Linear(784 -> 128)") != std::string::npos);
}

TEST_CASE("SequentialBlock and activation blocks") {
  NDManager m = NDManager::new_base_manager("seq");
  nn::SequentialBlock seq;
  seq.add(nn::relu_block()).add(nn::sigmoid_block()).add(nn::tanh_block());
  CHECK(seq.initialize(m, Shape{3}) == Shape{3});
  NDArray x = m.create(std::vector<float>{-1, 0, 2});
  std::vector<float> y = seq.forward(NDList{x}).head().to_vector<float>();
  auto f = [](float v) { return std::tanh(1.0f / (1.0f + std::exp(-std::max(v, 0.0f)))); };
  CHECK(y[0] == doctest::Approx(f(-1)));
  CHECK(y[2] == doctest::Approx(f(2)));
  CHECK(seq.parameters().empty());
  nn::SequentialBlock empty;
  CHECK(empty.forward(NDList{x}).head().same(x));
  CHECK_THROWS_WITH_AS(seq.add(nullptr), doctest::Contains("null"), InvalidArgument);
}

TEST_CASE("Parameter errors") {
  nn::Parameter p("w");
  CHECK_THROWS_WITH_AS(p.array(), doctest::Contains("Parameter 'w' is not initialized"), InvalidArgument);
  NDManager m = NDManager::new_base_manager("p");
  p.initialize(m, Shape{2}, DataType::float32, nn::ConstantInitializer(3));
  CHECK(p.array().to_vector<float>() == std::vector<float>{3, 3});
  CHECK(p.array().name() == "w");
  CHECK_THROWS_WITH_AS(p.initialize(m, Shape{2}, DataType::float32, nn::ConstantInitializer(0)),
                       doctest::Contains("already initialized"), InvalidArgument);
  CHECK(p.gradient().same(p.array().gradient()));
}

TEST_CASE("initializers: fans, scales and seeding") {
  CHECK(nn::fans(Shape{784, 128}) == std::pair<std::int64_t, std::int64_t>{784, 128});
  CHECK(nn::fans(Shape{10}) == std::pair<std::int64_t, std::int64_t>{10, 10});
  CHECK(nn::fans(Shape{16, 8, 3, 3}) == std::pair<std::int64_t, std::int64_t>{72, 144});
  NDManager m = NDManager::new_base_manager("init");
  NDArray a = m.zeros({400, 600}), b = m.zeros({400, 600});
  nn::XavierInitializer(nn::XavierInitializer::Distribution::uniform, 1.0, 7).initialize(a);
  const double bound = std::sqrt(6.0 / 1000.0);
  CHECK(a.max().item<float>() <= bound);
  CHECK(a.min().item<float>() >= -bound);
  CHECK(a.abs().max().item<float>() > 0.9 * bound);
  // Same seed, same values, whatever was drawn in between.
  set_random_seed(1);
  m.random_normal({10});
  nn::XavierInitializer(nn::XavierInitializer::Distribution::uniform, 1.0, 7).initialize(b);
  CHECK(a.to_vector<float>() == b.to_vector<float>());
  // He: stddev sqrt(2 / fan_in).
  nn::HeInitializer(11).initialize(a);
  const double sd = std::sqrt(a.square().mean().item<float>());
  CHECK(sd == doctest::Approx(std::sqrt(2.0 / 400)).epsilon(0.02));
  nn::NormalInitializer(0.5, 3).initialize(a);
  CHECK(std::sqrt(a.square().mean().item<float>()) == doctest::Approx(0.5).epsilon(0.02));
  // Unseeded initializers follow set_random_seed.
  set_random_seed(5);
  nn::NormalInitializer(1.0).initialize(a);
  set_random_seed(5);
  nn::NormalInitializer(1.0).initialize(b);
  CHECK(a.to_vector<float>() == b.to_vector<float>());
  NDArray ints = m.zeros({2}, DataType::int32);
  CHECK_THROWS_AS(nn::NormalInitializer().initialize(ints), DTypeMismatch);
}

TEST_CASE("set_initializer applies to every parameter of a kind") {
  NDManager m = NDManager::new_base_manager("init");
  nn::Mlp mlp(3, 2, {4});
  mlp.set_initializer(std::make_shared<nn::ConstantInitializer>(0.25));
  mlp.set_initializer(std::make_shared<nn::ConstantInitializer>(1), nn::Parameter::Kind::bias);
  mlp.initialize(m, Shape{1, 3});
  for (const auto& p : mlp.parameters()) {
    const float expected = p.parameter->kind() == nn::Parameter::Kind::bias ? 1.0f : 0.25f;
    for (float v : p.parameter->array().to_vector<float>()) CHECK(v == expected);
  }
}

TEST_CASE("a block's backward reaches every parameter") {
  NDManager model = NDManager::new_base_manager("model");
  nn::Mlp mlp(6, 3, {5});
  mlp.initialize(model, Shape{4, 6});
  NDManager step = model.new_sub_manager("step");
  {
    GradientCollector c;
    NDArray y = mlp.forward(NDList{step.random_normal({4, 6})}).head();
    c.backward(y.square().mean());
  }
  for (const auto& p : mlp.parameters()) CHECK(p.parameter->gradient().abs().sum().item<float>() > 0);
}

}  // namespace ndgc
