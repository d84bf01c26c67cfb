// Losses: values against hand computations, gradients, label forms, errors.
#include <doctest/doctest.h>

#include <cmath>

#include <ndgc/autograd.hpp>
#include <ndgc/loss.hpp>
#include <ndgc/ndgc.hpp>

namespace ndgc {

TEST_CASE("SoftmaxCrossEntropyLoss: value and gradient (softmax - onehot) / B") {
  NDManager m = NDManager::new_base_manager("loss");
  std::vector<double> logits = {1, 2, 3, 0.5, -1, 2};
  NDArray pred = m.create(logits, Shape{2, 3}).set_requires_gradient(true);
  NDArray labels = m.create(std::vector<std::int64_t>{2, 0});
  nn::SoftmaxCrossEntropyLoss loss;
  GradientCollector c;
  NDArray l = loss.evaluate(NDList{labels}, NDList{pred});
  CHECK(l.shape() == Shape{});
  auto lse = [](double a, double b, double d) { return std::log(std::exp(a) + std::exp(b) + std::exp(d)); };
  const double expected = ((lse(1, 2, 3) - 3) + (lse(0.5, -1, 2) - 0.5)) / 2;
  CHECK(l.item<double>() == doctest::Approx(expected));
  c.backward(l);
  std::vector<double> g = pred.gradient().to_vector<double>();
  const double z0 = std::exp(lse(1, 2, 3)), z1 = std::exp(lse(0.5, -1, 2));
  const std::vector<double> want = {std::exp(1) / z0 / 2, std::exp(2) / z0 / 2, (std::exp(3) / z0 - 1) / 2,
                                    (std::exp(0.5) / z1 - 1) / 2, std::exp(-1) / z1 / 2, std::exp(2) / z1 / 2};
  for (std::size_t i = 0; i < 6; ++i) CHECK(g[i] == doctest::Approx(want[i]));
  // The same with [B, 1] float labels, dense one-hot labels and log-probabilities.
  CHECK(loss.evaluate(NDList{m.create(std::vector<double>{2, 0}, Shape{2, 1})}, NDList{pred}).item<double>() ==
        doctest::Approx(expected));
  nn::SoftmaxCrossEntropyLoss dense("dense", false);
  NDArray onehot = m.create(std::vector<double>{0, 0, 1, 1, 0, 0}, Shape{2, 3});
  CHECK(dense.evaluate(NDList{onehot}, NDList{pred}).item<double>() == doctest::Approx(expected));
  nn::SoftmaxCrossEntropyLoss from_log("log", true, true);
  CHECK(from_log.evaluate(NDList{labels}, NDList{pred.log_softmax()}).item<double>() == doctest::Approx(expected));
}

TEST_CASE("SoftmaxCrossEntropyLoss errors") {
  NDManager m = NDManager::new_base_manager("loss");
  nn::SoftmaxCrossEntropyLoss loss;
  NDArray pred = m.zeros({2, 3});
  CHECK_THROWS_WITH_AS(loss.evaluate(NDList{m.zeros({3}, DataType::int64)}, NDList{pred}),
                       doctest::Contains("3 labels for 2 rows"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(loss.evaluate(NDList{}, NDList{pred}), doctest::Contains("needs a label and a prediction"),
                       InvalidArgument);
  CHECK_THROWS_AS(loss.evaluate(NDList{m.create(std::vector<std::int64_t>{0, 5})}, NDList{pred}), InvalidArgument);
  nn::SoftmaxCrossEntropyLoss dense("dense", false);
  CHECK_THROWS_WITH_AS(dense.evaluate(NDList{m.zeros({2, 2})}, NDList{pred}), doctest::Contains("must match"),
                       ShapeMismatch);
}

TEST_CASE("L2Loss and L1Loss") {
  NDManager m = NDManager::new_base_manager("loss");
  NDArray pred = m.create(std::vector<float>{1, 2, 3, 4}, Shape{2, 2}).set_requires_gradient(true);
  NDArray label = m.create(std::vector<float>{0, 2, 5, 4}, Shape{2, 2});
  GradientCollector c;
  NDArray l2 = nn::L2Loss().evaluate(NDList{label}, NDList{pred});
  CHECK(l2.item<float>() == doctest::Approx(0.5 * (1 + 0 + 4 + 0) / 4));
  c.backward(l2);
  CHECK(pred.gradient().to_vector<float>() == std::vector<float>{0.25f, 0, -0.5f, 0});  // (p - l) / 4
  autograd::zero_gradients(NDList{pred});
  NDArray l1 = nn::L1Loss("l1", 2.0).evaluate(NDList{label}, NDList{pred});
  CHECK(l1.item<float>() == doctest::Approx(2.0 * (1 + 0 + 2 + 0) / 4));
  c.backward(l1);
  CHECK(pred.gradient().to_vector<float>() == std::vector<float>{0.5f, 0, -0.5f, 0});
  CHECK(l2.manager().same(pred.manager()));
}

}  // namespace ndgc
