// ndgc::onnx's contract: load, forward, gradients, parameters, save, supported_ops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <ndgc/ndgc.hpp>
#include <ndgc/onnx.hpp>

#include "graph_builder.hpp"

namespace ndgc {
namespace {

using test::GraphBuilder;

// y = relu(x W1 + b1) W2 + b2 as two Gemms, x [N, 3], W1 [3, 4], W2 [4, 2].
GraphBuilder two_layer_graph() {
  GraphBuilder g;
  g.input("x", {-1, 3}).output("y", {-1, 2});
  g.floats("fc1.weight", {3, 4}, {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f, -0.9f, 1.0f, 0.2f, -0.1f});
  g.floats("fc1.bias", {4}, {0.05f, -0.05f, 0.1f, 0.0f});
  g.floats("fc2.weight", {4, 2}, {0.3f, -0.1f, 0.2f, 0.4f, -0.5f, 0.6f, 0.1f, 0.2f});
  g.floats("fc2.bias", {2}, {0.01f, 0.02f});
  g.node("Gemm", {"x", "fc1.weight", "fc1.bias"}, {"h"}, "fc1");
  g.node("Relu", {"h"}, {"r"}, "relu");
  g.node("Gemm", {"r", "fc2.weight", "fc2.bias"}, {"y"}, "fc2");
  return g;
}

NDArray by_hand(const NDArray& x, onnx::Imported& net) {
  auto p = [&](const char* name) {
    for (auto& [n, param] : net.model.parameters())
      if (n == name) return param->array();
    FAIL("no parameter " << name);
    return NDArray{};
  };
  return x.matmul(p("fc1.weight")).add(p("fc1.bias")).relu().matmul(p("fc2.weight")).add(p("fc2.bias"));
}

}  // namespace

TEST_CASE("onnx::load: inputs, outputs, opset and the initializers as named, trainable parameters") {
  test::TempFolder dir("load");
  onnx::Imported net = onnx::load(two_layer_graph().write(dir / "mlp.onnx"), "mlp");
  REQUIRE(net.inputs.size() == 1);
  CHECK(net.inputs[0].name == "x");
  CHECK(net.inputs[0].dtype == DataType::float32);
  CHECK(net.inputs[0].shape == std::vector<std::int64_t>{-1, 3});
  REQUIRE(net.outputs.size() == 1);
  CHECK(net.outputs[0].name == "y");
  CHECK(net.outputs[0].shape == std::vector<std::int64_t>{-1, 2});
  CHECK(net.opset == 13);
  std::vector<std::string> names;
  for (auto& [name, p] : net.model.parameters()) {
    names.push_back(name);
    CHECK(p->array().manager().same(net.model.manager()));
    CHECK(p->array().requires_gradient());
    CHECK(p->array().name() == name);
  }
  CHECK(names == std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  CHECK(net.model.block().describe().find("3 nodes") != std::string::npos);
}

TEST_CASE("onnx: forward computes the graph, in the input's manager, leaving the model's alone") {
  test::TempFolder dir("forward");
  onnx::Imported net = onnx::load(two_layer_graph().write(dir / "mlp.onnx"), "mlp");
  NDManager batch = net.model.manager().new_sub_manager("batch");
  NDArray x = batch.random_normal({5, 3});
  const std::size_t model_arrays = net.model.manager().array_count();
  NDList out = net.model.block().forward(NDList{x}, false);
  REQUIRE(out.size() == 1);
  CHECK(out[0].shape() == Shape{5, 2});
  CHECK(out[0].manager().same(batch));
  CHECK(net.model.manager().array_count() == model_arrays);
  const auto got = out[0].to_vector<float>(), want = by_hand(x, net).to_vector<float>();
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
}

TEST_CASE("onnx: a transposed weight, or an initializer as first input, puts nothing in the model's manager") {
  test::TempFolder dir("first");
  GraphBuilder g;
  g.input("x", {2, 2}).output("y", {2, 2});
  g.floats("w", {2, 2}, {1, 2, 3, 4});
  g.floats("m", {2, 2}, {1, 0, 0, 2});
  g.node("Sub", {"w", "x"}, {"d"});
  auto& gemm = g.node("Gemm", {"d", "m"}, {"y"});
  GraphBuilder::attr(gemm, "transB", std::int64_t{1});
  onnx::Imported net = onnx::load(g.write(dir / "sub.onnx"), "sub");
  NDManager batch = net.model.manager().new_sub_manager("batch");
  const std::size_t model_arrays = net.model.manager().array_count();
  NDArray y = net.model.block().forward(NDList{batch.full({2, 2}, 0.5)}, false).head();
  CHECK(y.to_vector<float>() == std::vector<float>{0.5f, 3.0f, 2.5f, 7.0f});
  CHECK(y.manager().same(batch));
  CHECK(net.model.manager().array_count() == model_arrays);
}

TEST_CASE("onnx: gradients flow to every trainable initializer, as through the same ops by hand") {
  test::TempFolder dir("grad");
  onnx::Imported net = onnx::load(two_layer_graph().write(dir / "mlp.onnx"), "mlp");
  NDManager batch = net.model.manager().new_sub_manager("batch");
  NDArray x = batch.random_normal({4, 3});
  std::vector<std::vector<float>> graph_grads, hand_grads;
  {
    GradientCollector collector;
    collector.backward(net.model.block().forward(NDList{x}, true).head().square().sum());
  }
  for (auto& [name, p] : net.model.parameters()) graph_grads.push_back(p->gradient().to_vector<float>());
  autograd::zero_gradients(net.model.block().parameter_arrays());
  {
    GradientCollector collector;
    collector.backward(by_hand(x, net).square().sum());
  }
  for (auto& [name, p] : net.model.parameters()) hand_grads.push_back(p->gradient().to_vector<float>());
  REQUIRE(graph_grads.size() == 4);
  for (std::size_t k = 0; k < 4; ++k) {
    REQUIRE(graph_grads[k].size() == hand_grads[k].size());
    CHECK(std::any_of(graph_grads[k].begin(), graph_grads[k].end(), [](float v) { return v != 0; }));
    for (std::size_t i = 0; i < graph_grads[k].size(); ++i)
      CHECK(graph_grads[k][i] == doctest::Approx(hand_grads[k][i]).epsilon(1e-5));
  }
}

TEST_CASE("onnx: ImportOptions::trainable false makes the initializers constants") {
  test::TempFolder dir("frozen");
  onnx::Imported net = onnx::load(two_layer_graph().write(dir / "mlp.onnx"), "mlp", Device::cpu(), {.trainable = false});
  for (auto& [name, p] : net.model.parameters()) {
    CHECK_FALSE(p->trainable());
    CHECK_FALSE(p->array().requires_gradient());
  }
  CHECK(net.model.block().trainable_parameters().empty());
}

TEST_CASE("onnx::save writes the current values; loading the file gives the same outputs to the bit") {
  test::TempFolder dir("save");
  onnx::Imported net = onnx::load(two_layer_graph().write(dir / "mlp.onnx"), "mlp");
  for (auto& [name, p] : net.model.parameters()) {
    NDArray a = p->array();
    a.mul_(1.5);
  }
  onnx::save(net, dir / "tuned.onnx");
  onnx::Imported again = onnx::load(dir / "tuned.onnx", "again");
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.random_normal({3, 3});
  CHECK(net.model.block().forward(NDList{x}, false).head().to_vector<float>() ==
        again.model.block().forward(NDList{x}, false).head().to_vector<float>());
  CHECK(again.inputs[0].name == "x");
}

TEST_CASE("onnx: a float16 graph (a FLOAT16 initializer, a bfloat16 Cast) runs, trains and saves to the bit") {
  test::TempFolder dir("half");
  test::GraphBuilder g;
  g.input("x", {-1, 2}, ::onnx::TensorProto::FLOAT16).output("y", {-1, 2}, ::onnx::TensorProto::BFLOAT16);
  auto* w = g.model().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(::onnx::TensorProto::FLOAT16);
  w->add_dims(2);
  for (float v : {1.5f, -2.0f}) w->add_int32_data(float16(v).bits);  // the bits, as onnx.proto stores them
  g.node("Mul", {"x", "w"}, {"m"}, "scale");
  auto& cast = g.node("Cast", {"m"}, {"y"}, "narrow");
  test::GraphBuilder::attr(cast, "to", std::int64_t{::onnx::TensorProto::BFLOAT16});
  onnx::Imported net = onnx::load(g.write(dir / "half.onnx"), "half");
  CHECK(net.inputs[0].dtype == DataType::float16);
  CHECK(net.outputs[0].dtype == DataType::bfloat16);
  REQUIRE(net.model.parameters().size() == 1);
  CHECK(net.model.parameters()[0].parameter->array().dtype() == DataType::float16);
  NDManager batch = NDManager::new_base_manager("half-batch");
  NDArray x = batch.create(std::vector<float>{2, 3, -1, 0.5f}, Shape{2, 2}).to_type(DataType::float16);
  NDArray y = net.model.block().forward(NDList{x}, false).head();
  CHECK(y.dtype() == DataType::bfloat16);
  CHECK(y.to_vector<float>() == std::vector<float>{3, -6, -1.5f, -1});
  {
    GradientCollector c;
    c.backward(net.model.block().forward(NDList{x}, true).head().to_type(DataType::float32).sum());
  }
  CHECK(net.model.parameters()[0].parameter->array().gradient().to_vector<float>() == std::vector<float>{1, 3.5f});
  onnx::save(net, dir / "again.onnx");
  onnx::Imported again = onnx::load(dir / "again.onnx", "again");
  CHECK(again.model.block().forward(NDList{x}, false).head().to_vector<float>() == y.to_vector<float>());
}

TEST_CASE("onnx::save refuses a model that was not imported") {
  onnx::Imported fake{Model("native", std::make_unique<nn::Linear>(2)), {}, {}, 0};
  CHECK_THROWS_WITH_AS(onnx::save(fake, "never.onnx"), doctest::Contains("not an imported ONNX graph"),
                       InvalidArgument);
}

TEST_CASE("onnx: Conv and MaxPool with pads that differ between the sides pad the input themselves") {
  test::TempFolder dir("pads");
  GraphBuilder g;
  g.input("x", {1, 1, 3, 3}).output("y", {1, 1, 3, 3}).output("m", {1, 1, 3, 3});
  g.floats("w", {1, 1, 2, 2}, {1, 1, 1, 1});
  auto& conv = g.node("Conv", {"x", "w"}, {"y"}, "conv");
  GraphBuilder::attr(conv, "pads", std::vector<std::int64_t>{0, 0, 1, 1});  // SAME_UPPER of a 2x2 kernel
  auto& pool = g.node("MaxPool", {"x"}, {"m"}, "pool");
  GraphBuilder::attr(pool, "kernel_shape", std::vector<std::int64_t>{2, 2});
  GraphBuilder::attr(pool, "pads", std::vector<std::int64_t>{1, 1, 0, 0});
  onnx::Imported net = onnx::load(g.write(dir / "pads.onnx"), "pads");
  NDManager batch = NDManager::new_base_manager("batch");
  NDList out = net.model.block().forward(NDList{batch.arange(1, 10).reshape({1, 1, 3, 3})}, false);
  CHECK(out[0].to_vector<float>() == std::vector<float>{12, 16, 9, 24, 28, 15, 15, 17, 9});
  CHECK(out[1].to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("onnx: ReduceProd of signed factors and zeros, and its gradient (product / x away from zeros)") {
  test::TempFolder dir("prod");
  GraphBuilder g;
  g.input("x", {2, 3}).output("y", {2, 1});
  auto& n = g.node("ReduceProd", {"x"}, {"y"}, "prod");
  GraphBuilder::attr(n, "axes", std::vector<std::int64_t>{1});
  onnx::Imported net = onnx::load(g.write(dir / "prod.onnx"), "prod");
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.create<double>({-2, 3, 0.5, -1, -4, 0}, Shape{2, 3}).to_type(DataType::float32);
  x.set_requires_gradient(true);
  NDArray y;
  {
    GradientCollector collector;
    y = net.model.block().forward(NDList{x}, true).head();
    collector.backward(y);
  }
  const auto v = y.to_vector<float>();
  CHECK(v[0] == doctest::Approx(-3.0));
  CHECK(v[1] == 0.0f);
  const auto grad = x.gradient().to_vector<float>();
  CHECK(grad[0] == doctest::Approx(1.5));   // 3 · 0.5
  CHECK(grad[1] == doctest::Approx(-1.0));  // -2 · 0.5
  CHECK(grad[2] == doctest::Approx(-6.0));  // -2 · 3
}

TEST_CASE("onnx::supported_ops is sorted and names the ops that run") {
  const std::vector<std::string> ops = onnx::supported_ops();
  CHECK(std::is_sorted(ops.begin(), ops.end()));
  for (const char* op : {"Conv", "Gemm", "MatMul", "BatchNormalization", "Reshape", "Softmax", "LayerNormalization"})
    CHECK(std::find(ops.begin(), ops.end(), op) != ops.end());
  CHECK(std::find(ops.begin(), ops.end(), "NonMaxSuppression") == ops.end());
}

TEST_CASE("onnx: forward names the graph input whose dtype, rank or static dimension is wrong") {
  test::TempFolder dir("inputs");
  onnx::Imported net = onnx::load(two_layer_graph().write(dir / "mlp.onnx"), "mlp");
  NDManager batch = NDManager::new_base_manager("batch");
  auto& block = net.model.block();
  CHECK_THROWS_WITH_AS(block.forward(NDList{batch.zeros({2, 3}, DataType::float64)}, false),
                       doctest::Contains("input 'x' is float64"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(block.forward(NDList{batch.zeros({2, 3, 1})}, false), doctest::Contains("input 'x'"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(block.forward(NDList{batch.zeros({2, 4})}, false), doctest::Contains("input 'x'"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(block.forward(NDList{}, false), doctest::Contains("takes 1 (x)"), InvalidArgument);
}

TEST_CASE("onnx: Dropout and BatchNormalization follow forward's training flag, as PyTorch's modules") {
  test::TempFolder dir("modes");
  GraphBuilder g;
  g.input("x", {-1, 2, 1, 1}).output("y", {-1, 2, 1, 1});
  g.floats("scale", {2}, {1, 1}).floats("bias", {2}, {0, 0}).floats("mean", {2}, {0, 0}).floats("var", {2}, {1, 1});
  g.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"n"}, "bn");
  g.node("Dropout", {"n"}, {"y"}, "drop");
  onnx::Imported net = onnx::load(g.write(dir / "bn.onnx"), "bn");
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.create<float>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{4, 2, 1, 1});
  nn::Parameter* mean = nullptr;
  for (auto& [name, p] : net.model.parameters())
    if (name == "mean") mean = p;
  REQUIRE(mean);
  CHECK_FALSE(mean->trainable());  // a running statistic
  // Evaluation: the running statistics normalise, dropout passes through.
  const auto eval = net.model.block().forward(NDList{x}, false).head().to_vector<float>();
  const auto xs = x.to_vector<float>();
  for (std::size_t i = 0; i < xs.size(); ++i) CHECK(eval[i] == doctest::Approx(xs[i] / std::sqrt(1 + 1e-5)));
  CHECK(mean->array().to_vector<float>() == std::vector<float>{0, 0});
  // Training: batch statistics, running mean moved by momentum 0.1 (ONNX's 0.9), some elements dropped.
  set_random_seed(7);
  NDArray y = net.model.block().forward(NDList{x}, true).head();
  const auto m = mean->array().to_vector<float>();
  CHECK(m[0] == doctest::Approx(0.1 * 4.0));
  CHECK(m[1] == doctest::Approx(0.1 * 5.0));
  const auto v = y.to_vector<float>();
  CHECK(std::count(v.begin(), v.end(), 0.0f) > 0);
}

TEST_CASE("onnx: BatchNormalization's training_mode 1 normalises by the batch and returns the updated statistics") {
  test::TempFolder dir("training_mode");
  GraphBuilder g(15);
  g.input("x", {3, 2}).output("y", {3, 2}).output("new_mean", {2}).output("new_var", {2});
  g.floats("scale", {2}, {2, 1}).floats("bias", {2}, {0, 1}).floats("mean", {2}, {1, -1}).floats("var", {2}, {4, 2});
  auto& n = g.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y", "new_mean", "new_var"}, "bn");
  GraphBuilder::attr(n, "training_mode", std::int64_t{1});
  GraphBuilder::attr_f(n, "momentum", 0.75f);
  onnx::Imported net = onnx::load(g.write(dir / "bn.onnx"), "bn");
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.create<float>({1, 10, 2, 20, 6, 30}, Shape{3, 2});
  // Column 0: mean 3, biased variance 14/3; column 1: mean 20, variance 200/3.
  const NDList out = net.model.block().forward(NDList{x}, false);  // the attribute rules, not forward's flag
  REQUIRE(out.size() == 3);
  const auto y = out[0].to_vector<float>();
  CHECK(y[0] == doctest::Approx(2 * (1 - 3) / std::sqrt(14.0 / 3 + 1e-5)));
  CHECK(y[5] == doctest::Approx((30 - 20) / std::sqrt(200.0 / 3 + 1e-5) + 1));
  const auto m = out[1].to_vector<float>(), v = out[2].to_vector<float>();
  CHECK(m[0] == doctest::Approx(0.75 * 1 + 0.25 * 3));
  CHECK(m[1] == doctest::Approx(0.75 * -1 + 0.25 * 20));
  CHECK(v[0] == doctest::Approx(0.75 * 4 + 0.25 * 14.0 / 3));
  CHECK(v[1] == doctest::Approx(0.75 * 2 + 0.25 * 200.0 / 3));
  for (auto& [name, p] : net.model.parameters())  // outputs, not updates: the graph's statistics stay
    if (name == "mean") CHECK(p->array().to_vector<float>() == std::vector<float>{1, -1});
}

TEST_CASE("onnx: BatchNormalization's statistics outputs without training_mode, or before opset 14, are refused") {
  test::TempFolder dir("bn_outputs");
  for (const std::int64_t opset : {9, 15}) {
    CAPTURE(opset);
    // The checker wants all five of opset 9's outputs or all three of opset 15's; "" leaves one out.
    std::vector<std::string> outputs{"y", "a", "b"};
    if (opset == 9) outputs = {"y", "a", "", "", ""};
    GraphBuilder g(opset);
    g.input("x", {3, 2});
    for (const auto& o : outputs)
      if (!o.empty()) g.output(o, o == "y" ? std::vector<std::int64_t>{3, 2} : std::vector<std::int64_t>{2});
    g.floats("scale", {2}, {1, 1}).floats("bias", {2}, {0, 0}).floats("mean", {2}, {0, 0}).floats("var", {2}, {1, 1});
    g.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, outputs, "stats");
    const char* why = opset == 9 ? "BatchNormalization 'stats': the outputs after Y before opset 14"
                                 : "BatchNormalization 'stats': outputs running_mean and running_var need training_mode 1";
    CHECK_THROWS_WITH_AS(onnx::load(g.write(dir / "bn.onnx"), "bn"), doctest::Contains(why), InvalidArgument);
  }
}

}  // namespace ndgc
