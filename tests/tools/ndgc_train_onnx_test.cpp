// ndgc-train --model FILE.onnx: an ONNX graph trained as ndgc-train's own
// models are, with the same measurements, --leak model and --save as ONNX.
#include <doctest/doctest.h>

#include <random>

#include <ndgc/ndgc.hpp>
#if NDGC_TEST_ONNX
#include <ndgc/onnx.hpp>

#include "leak_run.hpp"
#include "onnx/graph_builder.hpp"

namespace ndgc::train_tool {
namespace {

// 784 -> 32 -> 10 as Gemm, Relu, Gemm, small random weights; `image`: the input as [N, 1, 28, 28].
std::filesystem::path write_mlp(const std::filesystem::path& file, bool image) {
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  auto draw = [&](std::size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = normal(gen);
    return v;
  };
  test::GraphBuilder g;
  g.output("logits", {-1, 10});
  g.floats("fc1.weight", {784, 32}, draw(784 * 32)).floats("fc1.bias", {32}, std::vector<float>(32, 0.0f));
  g.floats("fc2.weight", {32, 10}, draw(320)).floats("fc2.bias", {10}, std::vector<float>(10, 0.0f));
  std::string x = "x";
  if (image) {
    g.input("x", {-1, 1, 28, 28});
    auto& flat = g.node("Flatten", {"x"}, {"flat"});
    test::GraphBuilder::attr(flat, "axis", std::int64_t{1});
    x = "flat";
  } else {
    g.input("x", {-1, 784});
  }
  g.node("Gemm", {x, "fc1.weight", "fc1.bias"}, {"h"});
  g.node("Relu", {"h"}, {"r"});
  g.node("Gemm", {"r", "fc2.weight", "fc2.bias"}, {"logits"});
  return g.write(file);
}

}  // namespace

TEST_CASE("ndgc-train --model FILE.onnx: trains the graph, measures it, and --save writes the trained graph") {
  SmallData data;
  for (bool image : {false, true}) {
    CAPTURE(image);
    Options o = leak_options(data, Device::cpu(), AutoClose::off, 2);
    o.leak = Leak::none;
    o.model = write_mlp(data.dir / "mlp.onnx", image).string();
    o.save = data.dir / "tuned.onnx";
    const RunResult r = run_in_process(o);
    REQUIRE(r.epochs.size() == 2);
    CHECK(r.epochs.back().test_accuracy > 0.5);
    CHECK(r.epochs[1].live_arrays == r.epochs[0].live_arrays);  // a pass leaves nothing in the model's manager
    onnx::Imported before = onnx::load(o.model, "before");
    onnx::Imported after = onnx::load(o.save, "after");
    CHECK(after.inputs[0].shape == before.inputs[0].shape);
    CHECK(after.model.parameters()[0].parameter->array().to_vector<float>() !=
          before.model.parameters()[0].parameter->array().to_vector<float>());
  }
}

TEST_CASE("ndgc-train --model FILE.onnx --leak model: grows with auto-close off, flat with it on") {
  SmallData data;
  Options off = leak_options(data, Device::cpu(), AutoClose::off, 3);
  off.model = write_mlp(data.dir / "mlp.onnx", false).string();
  Options on = off;
  on.autoclose = AutoClose::on;
  const RunResult leaking = run_in_process(off);
  const RunResult flat = run_in_process(on);
  CHECK(leaking.epochs[2].live_arrays > leaking.epochs[1].live_arrays);
  CHECK(flat.epochs[2].live_arrays == flat.epochs[1].live_arrays);
}

TEST_CASE("ndgc-train --model FILE.onnx refuses a graph that does not take Fashion-MNIST images, naming the shapes") {
  SmallData data;
  test::GraphBuilder g;
  g.input("x", {-1, 3, 32, 32}).output("y", {-1, 3, 32, 32});
  g.node("Relu", {"x"}, {"y"});
  Options o = leak_options(data, Device::cpu(), AutoClose::off, 1);
  o.model = g.write(data.dir / "wrong.onnx").string();
  CHECK_THROWS_WITH_AS(run_in_process(o), doctest::Contains("[N, 1, 28, 28] or [N, 784]"), InvalidArgument);
}

}  // namespace ndgc::train_tool
#endif
