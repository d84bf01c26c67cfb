// If, Loop and Scan beyond the conformance cases: subgraphs reading values of
// the graphs around them (two scopes out included), gradients through the
// iterations, and the refusals at load (a node inside a subgraph that ndgc
// cannot run, a Loop that would never end), each leaving nothing allocated.
#include <doctest/doctest.h>

#include <ndgc/ndgc.hpp>
#include <ndgc/onnx.hpp>

#include "graph_builder.hpp"

namespace ndgc {
namespace {

using test::GraphBuilder;
constexpr int kBool = ::onnx::TensorProto::BOOL, kInt64 = ::onnx::TensorProto::INT64;

// sum(y) after a training pass, so each input that requires it gets its gradient.
NDList outputs_after_backward(onnx::Imported& net, const NDList& inputs) {
  GradientCollector collector;
  NDList out = net.model.block().forward(inputs, true);
  collector.backward(out.head().sum());
  return out;
}

}  // namespace

TEST_CASE("onnx If: the branch the condition picks runs, reading the outer graph's values, with its gradient") {
  test::TempFolder dir("if");
  GraphBuilder then_branch, else_branch;
  then_branch.output("squared", {3});
  then_branch.node("Mul", {"x", "x"}, {"squared"});  // x is the outer graph's input
  else_branch.output("negated", {3});
  else_branch.node("Neg", {"x"}, {"negated"});
  GraphBuilder g(13);
  g.input("x", {3}).input("c", {}, kBool).output("y", {3});
  auto& n = g.node("If", {"c"}, {"y"}, "branch");
  GraphBuilder::attr_g(n, "then_branch", then_branch);
  GraphBuilder::attr_g(n, "else_branch", else_branch);
  onnx::Imported net = onnx::load(g.write(dir / "if.onnx"), "if");
  NDManager batch = NDManager::new_base_manager("batch");
  for (const bool c : {true, false}) {
    CAPTURE(c);
    NDArray x = batch.create<float>({1, -2, 3}, Shape{3});
    x.set_requires_gradient(true);
    const NDList out = outputs_after_backward(net, NDList{x, batch.full(Shape{}, c ? 1.0 : 0.0, DataType::boolean)});
    CHECK(out.head().to_vector<float>() == (c ? std::vector<float>{1, 4, 9} : std::vector<float>{-1, 2, -3}));
    CHECK(x.gradient().to_vector<float>() == (c ? std::vector<float>{2, -4, 6} : std::vector<float>{-1, -1, -1}));
  }
}

TEST_CASE("onnx Loop: carried values, stacked scan outputs, an If inside reading two scopes out, and gradients") {
  test::TempFolder dir("loop");
  // The inner If adds x (two scopes out) on even iterations, and 0 · x on odd ones.
  GraphBuilder add_x, add_nothing;
  add_x.output("step", {2});
  add_x.node("Identity", {"x"}, {"step"});
  add_nothing.output("none", {2});
  add_nothing.node("Sub", {"x", "x"}, {"none"});
  GraphBuilder body(13);
  body.input("i", {}, kInt64).input("cond_in", {}, kBool).input("v", {2});
  body.output("cond_out", {}, kBool).output("v_out", {2}).output("trace", {2});
  body.ints("two", {}, {2}).ints("zero", {}, {0});
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.node("Mod", {"i", "two"}, {"parity"});
  body.node("Equal", {"parity", "zero"}, {"even"});
  auto& inner = body.node("If", {"even"}, {"increment"}, "inner");
  GraphBuilder::attr_g(inner, "then_branch", add_x);
  GraphBuilder::attr_g(inner, "else_branch", add_nothing);
  body.node("Add", {"v", "increment"}, {"v_out"});
  body.node("Identity", {"v_out"}, {"trace"});
  // The body's constants as Constant nodes: ndgc runs no initializer inside a subgraph.
  auto& model_body = *body.model().mutable_graph();
  for (int k = 0; k < model_body.initializer_size(); ++k) {
    auto* constant = model_body.add_node();
    constant->set_op_type("Constant");
    constant->add_output(model_body.initializer(k).name());
    auto* a = constant->add_attribute();
    a->set_name("value");
    a->set_type(::onnx::AttributeProto::TENSOR);
    *a->mutable_t() = model_body.initializer(k);
  }
  model_body.clear_initializer();
  // Constants first: the body's nodes then read them in order.
  auto* nodes = model_body.mutable_node();
  std::rotate(nodes->begin(), nodes->end() - 2, nodes->end());

  GraphBuilder g(13);
  g.input("x", {2}).output("v_final", {2}).output("traces", {3, 2});
  g.ints("trips", {}, {3});
  auto& n = g.node("Loop", {"trips", "", "x"}, {"v_final", "traces"}, "repeat");
  GraphBuilder::attr_g(n, "body", body);
  onnx::Imported net = onnx::load(g.write(dir / "loop.onnx"), "loop");
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.create<float>({1, 2}, Shape{2});
  x.set_requires_gradient(true);
  const NDList out = outputs_after_backward(net, NDList{x});
  // v: x, then + x (i = 0), + 0 (i = 1), + x (i = 2): 3x.
  CHECK(out[0].to_vector<float>() == std::vector<float>{3, 6});
  CHECK(out[1].shape() == Shape{3, 2});
  CHECK(out[1].to_vector<float>() == std::vector<float>{2, 4, 2, 4, 3, 6});
  CHECK(x.gradient().to_vector<float>() == std::vector<float>{3, 3});
}

TEST_CASE("onnx Scan: a running sum over a reversed input, the states and the stacked outputs, with gradients") {
  test::TempFolder dir("scan");
  GraphBuilder body(11);
  body.input("sum_in", {2}).input("row", {2}).output("sum_out", {2}).output("partial", {2});
  body.node("Add", {"sum_in", "row"}, {"sum_out"});
  body.node("Identity", {"sum_out"}, {"partial"});
  GraphBuilder g(11);
  g.input("start", {2}).input("rows", {3, 2}).output("total", {2}).output("partials", {3, 2});
  auto& n = g.node("Scan", {"start", "rows"}, {"total", "partials"}, "cumulative");
  GraphBuilder::attr_g(n, "body", body);
  GraphBuilder::attr(n, "num_scan_inputs", std::int64_t{1});
  GraphBuilder::attr(n, "scan_input_directions", std::vector<std::int64_t>{1});
  onnx::Imported net = onnx::load(g.write(dir / "scan.onnx"), "scan");
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray rows = batch.create<float>({1, 10, 2, 20, 3, 30}, Shape{3, 2});
  rows.set_requires_gradient(true);
  const NDList out = outputs_after_backward(net, NDList{batch.zeros(Shape{2}), rows});
  CHECK(out[0].to_vector<float>() == std::vector<float>{6, 60});
  CHECK(out[1].to_vector<float>() == std::vector<float>{3, 30, 5, 50, 6, 60});  // rows taken last first
  CHECK(rows.gradient().to_vector<float>() == std::vector<float>{1, 1, 1, 1, 1, 1});
}

TEST_CASE("onnx If and Loop are refused at load for a node inside that ndgc cannot run, or a loop without end") {
  test::TempFolder dir("control_refused");
  const std::uint64_t before = debug::live_array_count();
  GraphBuilder unsupported, fine;
  unsupported.output("r", {3});
  unsupported.node("Det", {"x"}, {"r"}, "determinant");
  fine.output("f", {3});
  fine.node("Identity", {"x"}, {"f"});
  GraphBuilder g(13);
  g.input("x", {3}).input("c", {}, kBool).output("y", {3});
  auto& n = g.node("If", {"c"}, {"y"}, "branch");
  GraphBuilder::attr_g(n, "then_branch", unsupported);
  GraphBuilder::attr_g(n, "else_branch", fine);
  CHECK_THROWS_WITH_AS(onnx::load(g.write(dir / "if.onnx"), "if"),
                       doctest::Contains("If 'branch': subgraph then_branch:"), InvalidArgument);
  CHECK_THROWS_WITH_AS(onnx::load(g.write(dir / "if.onnx"), "if"), doctest::Contains("Det 'determinant'"),
                       InvalidArgument);

  GraphBuilder body(13);
  body.input("i", {}, kInt64).input("cond_in", {}, kBool).input("v", {3});
  body.output("cond_out", {}, kBool).output("v_out", {3});
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.node("Identity", {"v"}, {"v_out"});
  GraphBuilder endless(13);
  endless.input("x", {3}).output("y", {3});
  auto& loop = endless.node("Loop", {"", "", "x"}, {"y"}, "forever");
  GraphBuilder::attr_g(loop, "body", body);
  CHECK_THROWS_WITH_AS(onnx::load(endless.write(dir / "endless.onnx"), "endless"),
                       doctest::Contains("Loop 'forever': neither a trip count M nor a condition"), InvalidArgument);
  CHECK(debug::live_array_count() == before);
}

TEST_CASE("onnx Loop: a trip count of two elements, and If: a condition of two, are errors naming the node") {
  test::TempFolder dir("control_shapes");
  GraphBuilder body(13);
  body.input("i", {}, kInt64).input("cond_in", {}, kBool).input("v", {3});
  body.output("cond_out", {}, kBool).output("v_out", {3});
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.node("Neg", {"v"}, {"v_out"});
  GraphBuilder g(13);
  g.input("x", {3}).input("m", {-1}, kInt64).output("y", {3});
  GraphBuilder::attr_g(g.node("Loop", {"m", "", "x"}, {"y"}, "repeat"), "body", body);
  onnx::Imported net = onnx::load(g.write(dir / "loop.onnx"), "loop");
  NDManager batch = NDManager::new_base_manager("batch");
  const NDArray x = batch.create<float>({1, 2, 3}, Shape{3});
  CHECK(net.model.block().forward(NDList{x, batch.create<std::int64_t>({3}, Shape{1})}, false).head().to_vector<float>() ==
        std::vector<float>{-1, -2, -3});  // three negations
  CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{x, batch.create<std::int64_t>({3, 4}, Shape{2})}, false),
                       doctest::Contains("Loop 'repeat': the trip count M has 2 elements"), ShapeMismatch);

  GraphBuilder branch;
  branch.output("same", {3});
  branch.node("Identity", {"x"}, {"same"});
  GraphBuilder pick(13);
  pick.input("x", {3}).input("c", {-1}, kBool).output("y", {3});
  auto& n = pick.node("If", {"c"}, {"y"}, "choose");
  GraphBuilder::attr_g(n, "then_branch", branch);
  GraphBuilder::attr_g(n, "else_branch", branch);
  onnx::Imported chooser = onnx::load(pick.write(dir / "if.onnx"), "if");
  CHECK_THROWS_WITH_AS(chooser.model.block().forward(NDList{x, batch.full(Shape{2}, 1.0, DataType::boolean)}, false),
                       doctest::Contains("If 'choose': the condition has 2 elements"), ShapeMismatch);
}

TEST_CASE("onnx Loop: with only a trip count, no condition or carried value, a body reading the outer graph") {
  // The subgraph's captured values follow the node's own inputs in a run;
  // the omitted condition must not be taken for one of them.
  test::TempFolder dir("loop_trips_only");
  GraphBuilder body(13);
  body.input("i", {}, kInt64).input("cond_in", {}, kBool);
  body.output("cond_out", {}, kBool).output("copy", {3});
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.node("Identity", {"x"}, {"copy"});  // x: the outer graph's input
  GraphBuilder g(13);
  g.input("x", {3}).output("copies", {2, 3});
  g.ints("trips", {}, {2});
  GraphBuilder::attr_g(g.node("Loop", {"trips", ""}, {"copies"}, "twice"), "body", body);
  onnx::Imported net = onnx::load(g.write(dir / "loop.onnx"), "loop");
  NDManager batch = NDManager::new_base_manager("batch");
  const NDArray out = net.model.block().forward(NDList{batch.create<float>({1, 2, 3}, Shape{3})}, false).head();
  CHECK(out.shape() == Shape{2, 3});
  CHECK(out.to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});
}

}  // namespace ndgc
