// GraphBlock: constants folded at load, chains fused (layer norms, MatMul
// then Add), intermediates released at their last use, and forward on
// several threads at once.
#include <doctest/doctest.h>

#include <cmath>
#include <thread>

#include <ndgc/ndgc.hpp>
#include <ndgc/onnx.hpp>

#include "graph_builder.hpp"
#include "onnx/graph_block.hpp"

namespace ndgc {
namespace {

using test::GraphBuilder;

onnx::detail::GraphBlock& graph_of(onnx::Imported& net) {
  return dynamic_cast<onnx::detail::GraphBlock&>(net.model.block());
}

// A training pass of x [2, 3, 4] (fixed values) through `net`, backward
// from sum(y²): y, x's gradient, then the gradients of the parameters named.
std::vector<std::vector<float>> pass_and_gradients(onnx::Imported& net, const std::vector<std::string>& params) {
  std::vector<float> v(24);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(float(i) * 1.3f) * 3;
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.create<float>(v, Shape{2, 3, 4});
  x.set_requires_gradient(true);
  std::vector<std::vector<float>> r;
  {
    GradientCollector collector;
    NDArray y = net.model.block().forward(NDList{x}, true).head();
    collector.backward(y.mul(y).sum());
    r.push_back(y.to_vector<float>());
  }
  r.push_back(x.gradient().to_vector<float>());
  for (const std::string& name : params)
    for (auto& [parameter, p] : net.model.parameters())
      if (parameter == name) r.push_back(p->array().gradient().to_vector<float>());
  return r;
}

void check_close(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want,
                 double epsilon) {
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    REQUIRE(got[k].size() == want[k].size());
    for (std::size_t i = 0; i < want[k].size(); ++i) CHECK(got[k][i] == doctest::Approx(want[k][i]).epsilon(epsilon));
  }
}

}  // namespace

TEST_CASE("GraphBlock: a Shape -> Gather -> Concat -> Reshape chain over a constant is folded at load") {
  test::TempFolder dir("fold");
  GraphBuilder g;
  g.input("x", {-1, 6}).output("y", {-1, 2, 3});
  g.floats("template", {1, 2, 3}, {0, 0, 0, 0, 0, 0});
  g.ints("batch", {1}, {-1});
  g.ints("one", {1}, {1});
  g.node("Shape", {"template"}, {"s"});
  g.node("Slice", {"s", "one", "batch"}, {"tail"});  // [2] of [1, 2, 3] ... up to the last
  g.ints("last", {1}, {3});
  g.node("Slice", {"s", "one", "last"}, {"dims"});
  g.node("Concat", {"batch", "dims"}, {"shape"});
  auto& c = g.model().mutable_graph()->mutable_node()->at(3);
  GraphBuilder::attr(c, "axis", std::int64_t{0});
  g.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  onnx::Imported net = onnx::load(g.write(dir / "fold.onnx"), "fold");
  CHECK(graph_of(net).step_count() == 1);  // only the Reshape of the input is left
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray y = net.model.block().forward(NDList{batch.arange(0, 24).reshape({4, 6})}, false).head();
  CHECK(y.shape() == Shape{4, 2, 3});
}

namespace {

// A Constant node giving the float scalar `value` as `name`.
void constant_scalar(GraphBuilder& g, const std::string& name, float value) {
  auto& n = g.node("Constant", {}, {name});
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(::onnx::TensorProto::FLOAT);
  a->mutable_t()->add_float_data(value);
}

// nn.LayerNorm over the last axis as PyTorch exports it before opset 17,
// with `tap` ("" for none) also a graph output.
GraphBuilder layer_norm_chain(const std::string& tap, bool eps_initializer) {
  GraphBuilder g;
  g.input("x", {-1, 3, 4}).output("y", {-1, 3, 4});
  if (!tap.empty()) g.output(tap, {-1, 3, 4});
  g.floats("gamma", {4}, {1.5f, -0.5f, 2, 1}).floats("beta", {4}, {0.25f, 0, -1, 0.5f});
  constant_scalar(g, "two", 2);
  if (eps_initializer) g.floats("eps", {}, {1e-5f});
  else constant_scalar(g, "eps", 1e-5f);
  auto mean = [&](const std::string& from, const std::string& to) {
    GraphBuilder::attr(g.node("ReduceMean", {from}, {to}), "axes", std::vector<std::int64_t>{-1});
  };
  mean("x", "m");
  g.node("Sub", {"x", "m"}, {"d"});
  g.node("Pow", {"d", "two"}, {"p"});
  mean("p", "v");
  g.node("Add", {"v", "eps"}, {"e"});
  g.node("Sqrt", {"e"}, {"s"});
  g.node("Div", {"d", "s"}, {"n"});
  g.node("Mul", {"n", "gamma"}, {"a"});
  g.node("Add", {"a", "beta"}, {"y"}, "norm");
  return g;
}

}  // namespace

TEST_CASE("GraphBlock: PyTorch's nine-node LayerNorm runs as one layer_norm, with the chain's values and gradients") {
  test::TempFolder dir("fuse");
  onnx::Imported fused = onnx::load(layer_norm_chain("", false).write(dir / "fused.onnx"), "fused");
  onnx::Imported tapped = onnx::load(layer_norm_chain("d", false).write(dir / "tapped.onnx"), "tapped");
  onnx::Imported trained_eps = onnx::load(layer_norm_chain("", true).write(dir / "eps.onnx"), "eps");
  CHECK(graph_of(fused).step_count() == 1);
  CHECK(graph_of(tapped).step_count() == 9);       // an intermediate the graph gives out: not fused
  CHECK(graph_of(trained_eps).step_count() == 9);  // an ε that is a parameter keeps its gradient: not fused
  check_close(pass_and_gradients(fused, {"gamma", "beta"}), pass_and_gradients(tapped, {"gamma", "beta"}), 1e-4);
}

namespace {

// A linear layer over a sequence as exporters write it: MatMul then Add of
// the bias, x [-1, 3, 4] → y [-1, 3, 5]; `tap` ("" for none) also a graph
// output, the bias `bias_width` wide, added on the left when `bias_first`.
GraphBuilder projection(const std::string& tap, std::int64_t bias_width, bool bias_first) {
  GraphBuilder g;
  g.input("x", {-1, 3, 4}).output("y", {-1, 3, 5});
  if (!tap.empty()) g.output(tap, {-1, 3, 5});
  std::vector<float> w(20), b(static_cast<std::size_t>(bias_width));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::cos(float(i) * 0.7f);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = 0.25f * float(i) - 0.5f;
  g.floats("w", {4, 5}, w).floats("b", {bias_width}, b);
  g.node("MatMul", {"x", "w"}, {"xw"}, "proj");
  if (bias_first) g.node("Add", {"b", "xw"}, {"y"}, "bias");
  else g.node("Add", {"xw", "b"}, {"y"}, "bias");
  return g;
}

}  // namespace

TEST_CASE("GraphBlock: MatMul then Add of a bias runs as one linear, with the pair's values and gradients") {
  test::TempFolder dir("projection");
  onnx::Imported fused = onnx::load(projection("", 5, false).write(dir / "fused.onnx"), "fused");
  onnx::Imported left = onnx::load(projection("", 5, true).write(dir / "left.onnx"), "left");
  onnx::Imported tapped = onnx::load(projection("xw", 5, false).write(dir / "tapped.onnx"), "tapped");
  onnx::Imported narrow = onnx::load(projection("", 1, false).write(dir / "narrow.onnx"), "narrow");
  CHECK(graph_of(fused).step_count() == 1);
  CHECK(graph_of(left).step_count() == 1);
  CHECK(graph_of(tapped).step_count() == 2);  // the product is a graph output too: not fused
  CHECK(graph_of(narrow).step_count() == 2);  // a bias broadcast from one element is not linear's: not fused
  const auto want = pass_and_gradients(tapped, {"w", "b"});
  REQUIRE(want.size() == 4);     // y, and the gradients of x, w and b
  CHECK(want[0].size() == 30);  // y [2, 3, 5]
  check_close(pass_and_gradients(fused, {"w", "b"}), want, 1e-5);
  check_close(pass_and_gradients(left, {"w", "b"}), want, 1e-5);
}

TEST_CASE("GraphBlock: a fused MatMul+Add given x of the wrong width fails as MatMul would, leaving nothing") {
  test::TempFolder dir("projection_error");
  GraphBuilder g = projection("", 5, false);
  g.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)
      ->set_dim_param("width");  // x [-1, 3, width]: checked only by the product
  onnx::Imported net = onnx::load(g.write(dir / "dynamic.onnx"), "dynamic");
  REQUIRE(graph_of(net).step_count() == 1);
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.ones({2, 3, 6});
  const std::size_t before = batch.array_count();
  gc::enable();  // what the failed pass made, no handle reaches: auto-close closes it
  CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{x}, false), doctest::Contains("inner dimensions 6 and 4"),
                       ShapeMismatch);
  gc::poll();
  gc::disable();
  CHECK(batch.array_count() == before);
  CHECK(batch.sub_managers().empty());
}

TEST_CASE("GraphBlock: with auto-close on, a forward pass's peak is its live set, not the sum of its intermediates") {
  test::TempFolder dir("peak");
  constexpr int kSteps = 32;
  GraphBuilder g;
  g.input("x", {1 << 16}).output("y", {1 << 16});
  std::string last = "x";
  for (int k = 0; k < kSteps; ++k) {
    const std::string out = k + 1 == kSteps ? "y" : "v" + std::to_string(k);
    g.node("Sigmoid", {last}, {out});
    last = out;
  }
  onnx::Imported net = onnx::load(g.write(dir / "chain.onnx"), "chain");
  gc::enable();
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.ones({1 << 16});
  gc::poll();
  memory::reset_peak(Device::cpu());
  const std::uint64_t base = memory::stats(Device::cpu()).current_bytes;
  NDArray y = net.model.block().forward(NDList{x}, false).head();
  const std::uint64_t peak = memory::stats(Device::cpu()).peak_bytes - base;
  gc::disable();
  const std::uint64_t one = std::uint64_t{4} << 16;
  CHECK(peak <= 4 * one);  // a few live arrays at a time
  CHECK(peak < kSteps * one / 4);
  MESSAGE("chain of " << kSteps << " intermediates of " << one << " bytes: peak " << peak << " bytes");
}

TEST_CASE("GraphBlock: forward on four threads at once gives each the same answer") {
  test::TempFolder dir("threads");
  GraphBuilder g;
  g.input("x", {-1, 4}).output("y", {-1, 4});
  g.floats("w", {4, 4}, {1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 0, 0, 0, 1, 1});
  g.node("MatMul", {"x", "w"}, {"h"});
  g.node("Tanh", {"h"}, {"y"});
  onnx::Imported net = onnx::load(g.write(dir / "mt.onnx"), "mt");
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.random_normal({8, 4});
  const std::vector<float> want = net.model.block().forward(NDList{x}, false).head().to_vector<float>();
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      NDManager mine = NDManager::new_base_manager("thread");
      for (int k = 0; k < 20; ++k) {
        NDArray y = net.model.block().forward(NDList{x}, false).head();
        if (y.to_vector<float>() != want) ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(mismatches == 0);
}

}  // namespace ndgc
