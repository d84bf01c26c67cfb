// The layer blocks (ndgc/nn_layers.hpp) and the training mode of
// Block::forward: shapes and names at initialize, the same values as the
// ops they wrap, running statistics that are saved but never trained, and
// errors that name the block.
#include <doctest/doctest.h>

#include <filesystem>
#include <unistd.h>

#include <ndgc/ndgc.hpp>

namespace ndgc {
namespace {

std::vector<float> values(const NDArray& a) { return a.to_vector<float>(); }

// Overrides only the one-argument form, as blocks written before the
// training flag do.
class OldStyleBlock : public nn::Block {
 public:
  using Block::forward;
  NDList forward(const NDList& inputs) override { return NDList{inputs.head().mul(2.0)}; }
  Shape output_shape(const Shape& s) const override { return s; }
  std::string describe() const override { return "OldStyle"; }
};

// Overrides neither form.
class NoForwardBlock : public nn::Block {
 public:
  Shape output_shape(const Shape& s) const override { return s; }
  std::string describe() const override { return "NoForward"; }
};

// Records the mode it was called with.
class ModeProbe : public nn::Block {
 public:
  using Block::forward;
  NDList forward(const NDList& inputs, bool training) override {
    seen = training;
    return inputs;
  }
  Shape output_shape(const Shape& s) const override { return s; }
  std::string describe() const override { return "ModeProbe"; }
  bool seen = false;
};

}  // namespace

TEST_CASE("Block::forward: the one-argument form means training exactly while a collector records") {
  NDManager m = NDManager::new_base_manager("mode");
  nn::SequentialBlock seq;
  seq.add(std::make_unique<OldStyleBlock>()).add(std::make_unique<ModeProbe>());
  auto* probe = static_cast<ModeProbe*>(seq.children()[1].second.get());
  seq.initialize(m, Shape{2});
  NDArray x = m.ones({2});
  CHECK(values(seq.forward(NDList{x}, true).head()) == std::vector<float>{2, 2});  // the old block still runs
  CHECK(probe->seen);
  seq.forward(NDList{x}, false);
  CHECK_FALSE(probe->seen);
  seq.forward(NDList{x});
  CHECK_FALSE(probe->seen);  // nothing records
  {
    GradientCollector c;
    seq.forward(NDList{x});
    CHECK(probe->seen);
    autograd::NoGradient pause;
    seq.forward(NDList{x});
    CHECK_FALSE(probe->seen);
  }
  NoForwardBlock none;
  CHECK_THROWS_WITH_AS(none.forward(NDList{x}), doctest::Contains("NoForward: the block overrides neither"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(none.forward(NDList{x}, true), doctest::Contains("NoForward"), InvalidArgument);
}

TEST_CASE("Conv2d: parameter names and shapes, the values of conv2d, describe") {
  NDManager m = NDManager::new_base_manager("conv");
  nn::Conv2d conv(6, {3, 3}, {2, 1}, {1, 1}, {1, 2}, 2);
  CHECK(conv.describe() == "Conv2d(? -> 6, 3x3, stride 2x1, padding 1x1, dilation 1x2, groups 2)");
  CHECK(conv.output_shape(Shape{2, 4, 7, 9}) == Shape{2, 6, 4, 7});
  CHECK(conv.initialize(m, Shape{2, 4, 7, 9}) == Shape{2, 6, 4, 7});
  std::vector<std::string> names;
  for (const auto& p : conv.parameters()) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"weight", "bias"});
  CHECK(conv.weight().array().shape() == Shape{6, 2, 3, 3});
  CHECK(conv.bias()->array().shape() == Shape{6});
  CHECK(conv.describe() == "Conv2d(4 -> 6, 3x3, stride 2x1, padding 1x1, dilation 1x2, groups 2)");
  set_random_seed(3);
  NDArray x = m.random_normal({2, 4, 7, 9});
  NDArray expected = conv2d(x, conv.weight().array(), conv.bias()->array(), {2, 1}, {1, 1}, {1, 2}, 2);
  CHECK(values(conv.forward(NDList{x}).head()) == values(expected));
  nn::Conv2d plain(3, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, false);
  plain.initialize(m, Shape{1, 2, 4, 4});
  CHECK(plain.bias() == nullptr);
  CHECK(plain.parameters().size() == 1);
}

TEST_CASE("Conv2d errors name the block and what is wrong") {
  NDManager m = NDManager::new_base_manager("conv errors");
  CHECK_THROWS_WITH_AS(nn::Conv2d(0, {3, 3}), doctest::Contains("out_channels must be positive"), InvalidArgument);
  CHECK_THROWS_WITH_AS(nn::Conv2d(4, {3, 3}, {0, 1}), doctest::Contains("stride (0, 1) must be at least 1"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(nn::Conv2d(4, {3, 3}, {1, 1}, {0, 0}, {1, 0}), doctest::Contains("dilation"), InvalidArgument);
  CHECK_THROWS_WITH_AS(nn::Conv2d(4, {3, 3}, {1, 1}, {-1, 0}), doctest::Contains("padding"), InvalidArgument);
  CHECK_THROWS_WITH_AS(nn::Conv2d(4, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 3),
                       doctest::Contains("groups = 3 must be at least 1 and divide out_channels 4"), InvalidArgument);
  nn::Conv2d conv(4, {5, 5}, {1, 1}, {0, 0}, {1, 1}, 2);
  CHECK_THROWS_WITH_AS(conv.initialize(m, Shape{2, 3, 8, 8}),
                       doctest::Contains("Conv2d(? -> 4, 5x5, groups 2): groups = 2 does not divide the 3 input channels"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(conv.initialize(m, Shape{2, 8, 8}), doctest::Contains("must be [N, C, H, W], not (2, 8, 8)"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(conv.initialize(m, Shape{2, 4, 4, 8}),
                       doctest::Contains("larger than the padded input (2, 4, 4, 8)"), InvalidArgument);
  CHECK_FALSE(conv.is_initialized());
  CHECK(m.array_count() == 0);  // a failed initialize creates nothing
}

TEST_CASE("MaxPool2d and AvgPool2d: shapes, values, errors") {
  NDManager m = NDManager::new_base_manager("pools");
  nn::MaxPool2d maxp({2, 2}, {2, 2});
  nn::AvgPool2d avgp({3, 3}, {1, 1}, {1, 1});
  CHECK(maxp.describe() == "MaxPool2d(2x2, stride 2x2)");
  CHECK(avgp.describe() == "AvgPool2d(3x3, stride 1x1, padding 1x1)");
  CHECK(maxp.initialize(m, Shape{2, 3, 7, 6}) == Shape{2, 3, 3, 3});
  CHECK(avgp.output_shape(Shape{2, 3, 7, 6}) == Shape{2, 3, 7, 6});
  CHECK(maxp.parameters().empty());
  set_random_seed(4);
  NDArray x = m.random_normal({2, 3, 7, 6});
  CHECK(values(maxp.forward(NDList{x}).head()) == values(max_pool2d(x, {2, 2}, {2, 2})));
  CHECK(values(avgp.forward(NDList{x}).head()) == values(avg_pool2d(x, {3, 3}, {1, 1}, {1, 1})));
  CHECK_THROWS_WITH_AS(nn::MaxPool2d({2, 2}, {2, 2}, {2, 0}), doctest::Contains("at most half the kernel"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(nn::AvgPool2d({0, 2}, {1, 1}), doctest::Contains("AvgPool2d(0x2, stride 1x1): kernel"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(maxp.output_shape(Shape{2, 3, 1, 6}), doctest::Contains("MaxPool2d(2x2, stride 2x2): the kernel"),
                       InvalidArgument);
}

TEST_CASE("BatchNorm: running statistics are saved, never trained; training and evaluation differ") {
  NDManager m = NDManager::new_base_manager("bn");
  nn::BatchNorm bn(0.5);
  CHECK(bn.initialize(m, Shape{4, 3, 2, 2}) == Shape{4, 3, 2, 2});
  CHECK(bn.describe() == "BatchNorm(3)");
  std::vector<std::string> names, trainable;
  for (const auto& p : bn.parameters()) names.push_back(p.name);
  for (const auto& p : bn.trainable_parameters()) trainable.push_back(p.name);
  CHECK(names == std::vector<std::string>{"gamma", "beta", "running_mean", "running_var"});
  CHECK(trainable == std::vector<std::string>{"gamma", "beta"});
  CHECK(bn.parameter_arrays().size() == 2);
  CHECK_FALSE(bn.running_mean().array().requires_gradient());
  CHECK_FALSE(bn.running_mean().trainable());
  CHECK(bn.gamma().array().requires_gradient());
  CHECK(values(bn.running_var().array()) == std::vector<float>{1, 1, 1});

  set_random_seed(6);
  NDArray x = m.random_normal({4, 3, 2, 2}).mul(3.0).add(1.0);
  NDArray rm = m.zeros({3}), rv = m.ones({3});
  NDArray expected = batch_norm(x, bn.gamma().array(), bn.beta().array(), rm, rv, true, 0.5);
  {
    GradientCollector c;
    NDArray y = bn.forward(NDList{x}).head();  // training: a collector records
    CHECK(values(y) == values(expected));
    c.backward(y.mul(x).sum());
  }
  CHECK(values(bn.running_mean().array()) == values(rm));  // updated as the op updates them
  CHECK(values(bn.running_var().array()) == values(rv));
  CHECK(bn.gamma().gradient().abs().sum().item<float>() > 0);
  NDArray eval = bn.forward(NDList{x}, false).head();
  CHECK(values(eval) == values(batch_norm(x, bn.gamma().array(), bn.beta().array(), rm, rv, false)));
  CHECK(values(bn.running_mean().array()) == values(rm));  // evaluation leaves them alone

  CHECK_THROWS_WITH_AS(bn.output_shape(Shape{4, 5, 2, 2}), doctest::Contains("BatchNorm(3): the input (4, 5, 2, 2) has 5 channels"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(nn::BatchNorm().initialize(m, Shape{4}), doctest::Contains("must be [N, C, ...]"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(nn::BatchNorm(1.5), doctest::Contains("momentum 1.5 is outside [0, 1]"), InvalidArgument);
  CHECK_THROWS_WITH_AS(nn::BatchNorm(0.1, 0), doctest::Contains("eps must be positive"), InvalidArgument);
}

TEST_CASE("LayerNorm, Dropout and Embedding blocks") {
  NDManager m = NDManager::new_base_manager("blocks");
  set_random_seed(8);
  nn::LayerNorm ln;
  CHECK(ln.initialize(m, Shape{2, 3, 5}) == Shape{2, 3, 5});
  CHECK(ln.describe() == "LayerNorm(5)");
  NDArray x = m.random_normal({2, 3, 5});
  CHECK(values(ln.forward(NDList{x}).head()) == values(layer_norm(x, m.ones({5}), m.zeros({5}))));
  CHECK_THROWS_WITH_AS(ln.output_shape(Shape{2, 4}), doctest::Contains("LayerNorm(5): the input (2, 4) ends in 4"),
                       ShapeMismatch);

  nn::Dropout drop(0.5);
  CHECK(drop.describe() == "Dropout(0.5)");
  CHECK(drop.forward(NDList{x}, false).head().same(x));  // not training: x itself
  CHECK(drop.forward(NDList{x}).head().same(x));         // no collector: not training
  set_random_seed(9);
  NDArray a = drop.forward(NDList{x}, true).head();
  set_random_seed(9);
  CHECK(values(a) == values(dropout(x, 0.5, true)));
  CHECK_THROWS_WITH_AS(nn::Dropout(1.0), doctest::Contains("Dropout(1): p is outside [0, 1)"), InvalidArgument);

  nn::Embedding emb(10, 4);
  CHECK(emb.output_shape(Shape{2, 7}) == Shape{2, 7, 4});
  emb.initialize(m, Shape{2, 7});
  CHECK(emb.weight().array().shape() == Shape{10, 4});
  CHECK(emb.describe() == "Embedding(10 x 4)");
  NDArray idx = m.create(std::vector<std::int64_t>{3, 3, 9}, Shape{1, 3});
  NDArray e = emb.forward(NDList{idx}).head();
  CHECK(e.shape() == Shape{1, 3, 4});
  CHECK(values(e) == values(embedding(idx, emb.weight().array())));
  CHECK_THROWS_WITH_AS(nn::Embedding(0, 4), doctest::Contains("Embedding(0 x 4): num_embeddings and dim must be positive"),
                       InvalidArgument);
}

TEST_CASE("a CNN model saves and loads its running statistics; the loaded model predicts the same") {
  const auto file = std::filesystem::temp_directory_path() / ("ndgc_cnn_" + std::to_string(::getpid()));
  auto make = [] {
    auto net = std::make_unique<nn::SequentialBlock>();
    net->add(std::make_unique<nn::Conv2d>(4, Pair{3, 3}, Pair{1, 1}, Pair{1, 1}))
        .add(std::make_unique<nn::BatchNorm>())
        .add(nn::relu_block())
        .add(std::make_unique<nn::MaxPool2d>(Pair{2, 2}, Pair{2, 2}))
        .add(nn::batch_flatten_block())
        .add(std::make_unique<nn::Dropout>(0.25))
        .add(std::make_unique<nn::Linear>(3));
    return net;
  };
  set_random_seed(10);
  Model a("a", make());
  a.initialize(Shape{5, 1, 6, 6});
  NDManager data = NDManager::new_base_manager("data");
  NDArray x = data.random_normal({5, 1, 6, 6});
  for (int i = 0; i < 3; ++i) a.block().forward(NDList{x}, true);  // moves the running statistics
  a.save(file);
  Model b("b", make());
  b.initialize(Shape{5, 1, 6, 6});
  b.load(file);
  std::filesystem::remove(file);
  std::vector<std::string> names;
  for (const auto& p : b.parameters()) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "1.gamma", "1.beta", "1.running_mean",
                                          "1.running_var", "6.weight", "6.bias"});
  CHECK(values(b.parameters()[4].parameter->array()) == values(a.parameters()[4].parameter->array()));
  CHECK(values(b.parameters()[4].parameter->array()) != std::vector<float>(4, 0.0f));
  CHECK_FALSE(b.parameters()[4].parameter->array().requires_gradient());
  CHECK(values(b.block().forward(NDList{x}, false).head()) == values(a.block().forward(NDList{x}, false).head()));
}

}  // namespace ndgc
