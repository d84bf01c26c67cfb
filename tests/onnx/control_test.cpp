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

// A subgraph of one node, op(inputs) -> `out` of shape [3]; its inputs are
// the outer graph's values.
GraphBuilder branch_of(const char* op, std::vector<std::string> inputs, const std::string& out,
                       const std::string& name = "") {
  GraphBuilder b;
  b.output(out, {3});
  b.node(op, std::move(inputs), {out}, name);
  return b;
}

// y = If(c) of the two branches, over an input x [3] and a boolean c of `c_dims`.
GraphBuilder if_graph(const GraphBuilder& then_branch, const GraphBuilder& else_branch,
                      std::vector<std::int64_t> c_dims = {}, const std::string& name = "branch") {
  GraphBuilder g(13);
  g.input("x", {3}).input("c", std::move(c_dims), kBool).output("y", {3});
  auto& n = g.node("If", {"c"}, {"y"}, name);
  GraphBuilder::attr_g(n, "then_branch", then_branch);
  GraphBuilder::attr_g(n, "else_branch", else_branch);
  return g;
}

}  // namespace

TEST_CASE("onnx If: the branch the condition picks runs, reading the outer graph's values, with its gradient") {
  test::TempFolder dir("if");
  // x is the outer graph's input.
  const GraphBuilder g = if_graph(branch_of("Mul", {"x", "x"}, "squared"), branch_of("Neg", {"x"}, "negated"));
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
  const GraphBuilder g = if_graph(branch_of("Det", {"x"}, "r", "determinant"), branch_of("Identity", {"x"}, "f"));
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

  const GraphBuilder same = branch_of("Identity", {"x"}, "same");
  const GraphBuilder pick = if_graph(same, same, {-1}, "choose");
  onnx::Imported chooser = onnx::load(pick.write(dir / "if.onnx"), "if");
  CHECK_THROWS_WITH_AS(chooser.model.block().forward(NDList{x, batch.full(Shape{2}, 1.0, DataType::boolean)}, false),
                       doctest::Contains("If 'choose': the condition has 2 elements"), ShapeMismatch);
}

TEST_CASE("onnx Loop and Scan: a body that gives fewer outputs than the values it carries, or a num_scan_inputs that "
          "does not fit, is refused at load") {
  // ONNX's checker accepts both graphs.
  test::TempFolder dir("short_bodies");
  const std::uint64_t before = debug::live_array_count();
  GraphBuilder body(13);
  body.input("i", {}, kInt64).input("cond_in", {}, kBool).input("v", {3}).input("u", {3});
  body.output("cond_out", {}, kBool).output("v_out", {3});  // no output for the carried u
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.node("Neg", {"v"}, {"v_out"});
  GraphBuilder g(13);
  g.input("x", {3}).output("y", {3}).output("z", {3});
  g.ints("trips", {}, {2});
  GraphBuilder::attr_g(g.node("Loop", {"trips", "", "x", "x"}, {"y", "z"}, "short"), "body", body);
  CHECK_THROWS_WITH_AS(onnx::load(g.write(dir / "loop.onnx"), "loop"),
                       doctest::Contains("Loop 'short': the body gives 2 outputs for 2 carried values"), InvalidArgument);

  GraphBuilder step(13);  // two states in, one out
  step.input("s", {3}).input("t", {3}).input("x_t", {3}).output("s_out", {3});
  step.node("Add", {"s", "x_t"}, {"s_out"});
  const auto scan = [&](std::int64_t scanned) {
    GraphBuilder g(13);
    g.input("s0", {3}).input("t0", {3}).input("xs", {4, 3}).output("s_final", {3}).output("t_final", {3});
    auto& node = g.node("Scan", {"s0", "t0", "xs"}, {"s_final", "t_final"}, "sum");
    GraphBuilder::attr(node, "num_scan_inputs", scanned);
    GraphBuilder::attr_g(node, "body", step);
    return g;
  };
  CHECK_THROWS_WITH_AS(onnx::load(scan(1).write(dir / "scan.onnx"), "scan"),
                       doctest::Contains("Scan 'sum': the body gives 1 outputs for 2 states"), InvalidArgument);
  // No scanned input, or more than the node has: ONNX's shape inference
  // refuses the file before ndgc's own check (scan_check) is reached.
  for (std::int64_t m : {0, 4})
    CHECK_THROWS_WITH_AS(onnx::load(scan(m).write(dir / "misfit.onnx"), "misfit"),
                         doctest::Contains("misfit.onnx: ONNX shape inference failed"), DataError);
  CHECK(debug::live_array_count() == before);
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

TEST_CASE("onnx subgraphs and Scan: an initializer inside a subgraph is refused at load; scans that do not fit are "
          "errors naming the node") {
  test::TempFolder dir("control_errors");
  // A branch with an initializer of its own (a Constant node would run).
  GraphBuilder weighted = branch_of("Mul", {"x", "w"}, "scaled");
  weighted.floats("w", {3}, {1, 2, 3});
  CHECK_THROWS_WITH_AS(onnx::load(if_graph(weighted, branch_of("Identity", {"x"}, "f")).write(dir / "init.onnx"), "init"),
                       doctest::Contains("If 'branch': subgraph then_branch has initializers"), InvalidArgument);

  // Scan over two inputs that must share their number of steps.
  GraphBuilder body(11);
  body.input("s", {2}).input("a", {2}).input("b", {2}).output("s_out", {2});
  body.node("Add", {"s", "a"}, {"sa"});
  body.node("Add", {"sa", "b"}, {"s_out"});
  GraphBuilder g(11);
  g.input("start", {2}).input("as", {-1, 2}).input("bs", {-1, 2}).output("total", {2});
  auto& n = g.node("Scan", {"start", "as", "bs"}, {"total"}, "sum");
  GraphBuilder::attr_g(n, "body", body);
  GraphBuilder::attr(n, "num_scan_inputs", std::int64_t{2});
  onnx::Imported net = onnx::load(g.write(dir / "scan.onnx"), "scan");
  NDManager batch = NDManager::new_base_manager("batch");
  CHECK(net.model.block().forward(NDList{batch.zeros(Shape{2}), batch.ones(Shape{3, 2}), batch.ones(Shape{3, 2})},
                                  false)
            .head()
            .to_vector<float>() == std::vector<float>{6, 6});
  CHECK_THROWS_WITH_AS(
      net.model.block().forward(NDList{batch.zeros(Shape{2}), batch.ones(Shape{3, 2}), batch.ones(Shape{4, 2})}, false),
      doctest::Contains("Scan 'sum': scanned inputs of 3 and 4 steps"), ShapeMismatch);
  // One input direction for two scanned inputs.
  GraphBuilder::attr(n, "scan_input_directions", std::vector<std::int64_t>{0});
  onnx::Imported short_list = onnx::load(g.write(dir / "directions.onnx"), "directions");
  CHECK_THROWS_WITH_AS(
      short_list.model.block().forward(NDList{batch.zeros(Shape{2}), batch.ones(Shape{3, 2}), batch.ones(Shape{3, 2})},
                                       false),
      doctest::Contains("Scan 'sum': scan_input_directions has 1 entries for 2 values"), InvalidArgument);
}

TEST_CASE("onnx Scan at opset 8: sequence_lens is refused at load; states and inputs share the batch axis") {
  test::TempFolder dir("scan8");
  GraphBuilder body(8);
  body.input("s", {2}).input("a", {2}).output("s_out", {2});
  body.node("Add", {"s", "a"}, {"s_out"});
  auto scan = [&](bool lengths) {
    GraphBuilder g(8);
    g.input("start", {-1, 2}).input("as", {-1, 3, 2}).output("total", {-1, 2});
    if (lengths) g.input("lens", {-1}, ::onnx::TensorProto::INT32);
    auto& n = g.node("Scan", {lengths ? "lens" : "", "start", "as"}, {"total"}, "sum");
    GraphBuilder::attr_g(n, "body", body);
    GraphBuilder::attr(n, "num_scan_inputs", std::int64_t{1});
    return g;
  };
  CHECK_THROWS_WITH_AS(onnx::load(scan(true).write(dir / "lens.onnx"), "lens"),
                       doctest::Contains("Scan 'sum': sequence_lens is not supported"), InvalidArgument);
  onnx::Imported net = onnx::load(scan(false).write(dir / "scan.onnx"), "scan");
  NDManager batch = NDManager::new_base_manager("batch");
  CHECK(net.model.block().forward(NDList{batch.zeros(Shape{2, 2}), batch.ones(Shape{2, 3, 2})}, false)
            .head()
            .to_vector<float>() == std::vector<float>{3, 3, 3, 3});
  CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{batch.zeros(Shape{2, 2}), batch.ones(Shape{3, 3, 2})}, false),
                       doctest::Contains("Scan 'sum': opset 8's Scan wants one batch axis first"), ShapeMismatch);
}

}  // namespace ndgc
