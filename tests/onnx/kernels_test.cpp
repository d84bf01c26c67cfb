// Kernels the conformance suite checks only forward, or only on valid input:
// TopK's, GatherND's, Einsum's and the scatters' gradients, TopK's ties, Celu, LRN and MeanVarianceNormalization passing
// gradients back, and the errors of TopK, Compress, LRN and Upsample naming
// the node and what is wrong (and GatherND's).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include <ndgc/ndgc.hpp>
#include <ndgc/onnx.hpp>

#include "graph_builder.hpp"
#include "support/sanitizers.hpp"

namespace ndgc {
namespace {

using test::GraphBuilder;

// The graph's first output for `inputs`, after a backward pass of its sum,
// or of its sum weighted by `weights`; the caller marks which inputs require
// a gradient.
NDArray forward_with_gradient(onnx::Imported& net, const NDList& inputs, const NDArray& weights = NDArray()) {
  GradientCollector collector;
  NDArray y = net.model.block().forward(inputs, true).head();
  collector.backward(weights.defined() ? y.mul(weights).sum() : y.sum());
  return y;
}

// As above for a graph of one input, which gets its gradient.
NDArray forward_with_gradient(onnx::Imported& net, NDArray& x) {
  x.set_requires_gradient(true);
  return forward_with_gradient(net, NDList{x});
}

}  // namespace

TEST_CASE("onnx TopK: the k largest, ties to the lower position, and the gradient on the chosen elements") {
  test::TempFolder dir("topk");
  GraphBuilder g;
  g.input("x", {2, 4}).output("values", {2, 2}).output("indices", {2, 2}, ::onnx::TensorProto::INT64);
  g.ints("k", {1}, {2});
  auto& n = g.node("TopK", {"x", "k"}, {"values", "indices"}, "top2");
  GraphBuilder::attr(n, "axis", std::int64_t{1});
  onnx::Imported net = onnx::load(g.write(dir / "topk.onnx"), "topk");
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.create<float>({1, 5, 5, 2, -1, -3, 0, -2}, Shape{2, 4});
  const NDArray y = forward_with_gradient(net, x);
  CHECK(y.to_vector<float>() == std::vector<float>{5, 5, 0, -1});
  const NDArray indices = net.model.block().forward(NDList{x}, false)[1];
  CHECK(indices.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 2, 2, 0});
  CHECK(x.gradient().to_vector<float>() == std::vector<float>{0, 1, 1, 0, 1, 0, 1, 0});
}

TEST_CASE("onnx GatherND: rows by index pairs after a batch axis, with the gradient on the rows taken") {
  test::TempFolder dir("gathernd");
  GraphBuilder g;
  g.input("x", {2, 2, 3}).output("y", {2, 3});
  g.ints("at", {2, 1}, {1, 0});  // batch 0 takes its row 1, batch 1 its row 0
  auto& n = g.node("GatherND", {"x", "at"}, {"y"}, "rows");
  GraphBuilder::attr(n, "batch_dims", std::int64_t{1});
  onnx::Imported net = onnx::load(g.write(dir / "gathernd.onnx"), "gathernd");
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.arange(0.0, 12.0).reshape({2, 2, 3});
  const NDArray y = forward_with_gradient(net, x);
  CHECK(y.to_vector<float>() == std::vector<float>{3, 4, 5, 6, 7, 8});
  CHECK(x.gradient().to_vector<float>() == std::vector<float>{0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0});
}

TEST_CASE("onnx GatherND: an index past its axis is an error naming the node and the axis") {
  test::TempFolder dir("gathernd_bad");
  GraphBuilder g;
  g.input("x", {2, 3}).output("y", {1});
  g.ints("at", {1, 2}, {1, 3});
  g.node("GatherND", {"x", "at"}, {"y"}, "past");
  onnx::Imported net = onnx::load(g.write(dir / "gathernd.onnx"), "gathernd");
  NDManager batch = NDManager::new_base_manager("batch");
  CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{batch.zeros({2, 3})}, false),
                       doctest::Contains("'past': index 3 is out of range for axis 1 of length 3"), InvalidArgument);
}

TEST_CASE("onnx ScatterElements and ScatterND: the updates land, and data and updates get their gradients") {
  test::TempFolder dir("scatter");
  NDManager batch = NDManager::new_base_manager("batch");
  for (const char* op : {"ScatterElements", "ScatterND"}) {
    CAPTURE(op);
    const bool nd = std::string(op) == "ScatterND";
    GraphBuilder g;
    g.input("x", {2, 3}).input("u", nd ? std::vector<std::int64_t>{1, 3} : std::vector<std::int64_t>{1, 2})
        .output("y", {2, 3});
    // ScatterElements: row 0 of the updates to rows [1, 0] of columns 0 and 1; ScatterND: all of row 1.
    if (nd) g.ints("at", {1, 1}, {1});
    else g.ints("at", {1, 2}, {1, 0});
    g.node(op, {"x", "at", "u"}, {"y"}, "put");
    onnx::Imported net = onnx::load(g.write(dir / "scatter.onnx"), "scatter");
    NDArray x = batch.arange(0.0, 6.0).reshape({2, 3});
    NDArray u = batch.create<float>(nd ? std::vector<float>{10, 20, 30} : std::vector<float>{10, 20},
                                    nd ? Shape{1, 3} : Shape{1, 2});
    x.set_requires_gradient(true);
    u.set_requires_gradient(true);
    const NDArray y = forward_with_gradient(net, NDList{x, u}, batch.arange(1.0, 7.0).reshape({2, 3}));
    if (nd) {
      CHECK(y.to_vector<float>() == std::vector<float>{0, 1, 2, 10, 20, 30});
      CHECK(x.gradient().to_vector<float>() == std::vector<float>{1, 2, 3, 0, 0, 0});
      CHECK(u.gradient().to_vector<float>() == std::vector<float>{4, 5, 6});
    } else {
      CHECK(y.to_vector<float>() == std::vector<float>{0, 20, 2, 10, 4, 5});
      CHECK(x.gradient().to_vector<float>() == std::vector<float>{1, 0, 3, 0, 5, 6});
      CHECK(u.gradient().to_vector<float>() == std::vector<float>{4, 2});
    }
  }
}

TEST_CASE("onnx ScatterND 'mul': every update reaching a position multiplies it, with gradients") {
  test::TempFolder dir("scatter_mul");
  GraphBuilder g(16);
  g.input("x", {3}).input("u", {3}).output("y", {3});
  g.ints("at", {3, 1}, {1, 1, 2});  // two updates for position 1, one for 2
  GraphBuilder::attr_s(g.node("ScatterND", {"x", "at", "u"}, {"y"}, "product"), "reduction", "mul");
  onnx::Imported net = onnx::load(g.write(dir / "mul.onnx"), "mul");
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.create<float>(std::vector<float>{2, 3, 4}, Shape{3}).set_requires_gradient(true);
  NDArray u = batch.create<float>(std::vector<float>{5, 6, 7}, Shape{3}).set_requires_gradient(true);
  const NDArray y = forward_with_gradient(net, NDList{x, u}, batch.create<float>(std::vector<float>{1, 2, 3}, Shape{3}));
  CHECK(y.to_vector<float>() == std::vector<float>{2, 90, 28});
  CHECK(x.gradient().to_vector<float>() == std::vector<float>{1, 60, 21});
  CHECK(u.gradient().to_vector<float>() == std::vector<float>{36, 30, 12});
  // Integer data multiplies on the host.
  GraphBuilder h(16);
  h.input("x", {3}, ::onnx::TensorProto::INT64).input("u", {3}, ::onnx::TensorProto::INT64);
  h.output("y", {3}, ::onnx::TensorProto::INT64);
  h.ints("at", {3, 1}, {1, 1, 2});
  GraphBuilder::attr_s(h.node("ScatterND", {"x", "at", "u"}, {"y"}, "product"), "reduction", "mul");
  onnx::Imported ints = onnx::load(h.write(dir / "mul_int.onnx"), "mul_int");
  const NDList out = ints.model.block().forward(
      NDList{batch.create<std::int64_t>(std::vector<std::int64_t>{2, 3, 4}, Shape{3}),
             batch.create<std::int64_t>(std::vector<std::int64_t>{5, 6, 7}, Shape{3})},
      false);
  CHECK(out[0].to_vector<std::int64_t>() == std::vector<std::int64_t>{2, 90, 28});
}

TEST_CASE("onnx ScatterElements 'mul': every update reaching a position multiplies it, with gradients") {
  test::TempFolder dir("scatter_elements_mul");
  GraphBuilder g(16);
  g.input("x", {2, 3}).input("u", {2, 2}).output("y", {2, 3});
  g.ints("at", {2, 2}, {1, 1, 0, 2});  // row 0: column 1 twice; row 1: columns 0 and 2
  auto& n = g.node("ScatterElements", {"x", "at", "u"}, {"y"}, "product");
  GraphBuilder::attr_s(n, "reduction", "mul");
  GraphBuilder::attr(n, "axis", std::int64_t{1});
  onnx::Imported net = onnx::load(g.write(dir / "mul.onnx"), "mul");
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.create<float>(std::vector<float>{2, 3, 4, 5, 6, 7}, Shape{2, 3}).set_requires_gradient(true);
  NDArray u = batch.create<float>(std::vector<float>{5, 6, 7, 8}, Shape{2, 2}).set_requires_gradient(true);
  const NDArray w = batch.create<float>(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const NDArray y = forward_with_gradient(net, NDList{x, u}, w);
  CHECK(y.to_vector<float>() == std::vector<float>{2, 90, 4, 35, 6, 56});
  CHECK(x.gradient().to_vector<float>() == std::vector<float>{1, 60, 3, 28, 5, 48});
  CHECK(u.gradient().to_vector<float>() == std::vector<float>{36, 30, 20, 42});
}

TEST_CASE("onnx axes: a scalar has none, so slicing or gathering one is an error naming the axis") {
  // A fuzzed Slice of a scalar indexed a per-axis list of no entries (UBSan).
  test::TempFolder dir("scalar_axes");
  NDManager batch = NDManager::new_base_manager("batch");
  GraphBuilder g;
  g.input("x", {}).output("y", {});
  g.ints("from", {1}, {0}).ints("to", {1}, {1});
  g.node("Slice", {"x", "from", "to"}, {"y"}, "cut");
  onnx::Imported net = onnx::load(g.write(dir / "slice.onnx"), "slice");
  CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{batch.create_scalar(1.0f)}, false),
                       doctest::Contains("'cut': axis 0 is out of range for rank 0"), InvalidArgument);
  GraphBuilder h;
  h.input("x", {}).output("y", {});
  h.ints("at", {}, {0});
  h.node("Gather", {"x", "at"}, {"y"}, "pick");
  onnx::Imported gather = onnx::load(h.write(dir / "gather.onnx"), "gather");
  CHECK_THROWS_WITH_AS(gather.model.block().forward(NDList{batch.create_scalar(1.0f)}, false),
                       doctest::Contains("'pick': axis 0 is out of range for rank 0"), InvalidArgument);
}

TEST_CASE("onnx scatters: two updates for one position under 'none' are an error; an unknown reduction is refused "
          "at load") {
  test::TempFolder dir("scatter_bad");
  NDManager batch = NDManager::new_base_manager("batch");
  {
    GraphBuilder g;
    g.input("x", {3}).input("u", {2}).output("y", {3});
    g.ints("at", {2}, {1, 1});
    GraphBuilder::attr(g.node("ScatterElements", {"x", "at", "u"}, {"y"}, "twice"), "axis", std::int64_t{0});
    onnx::Imported net = onnx::load(g.write(dir / "twice.onnx"), "twice");
    CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{batch.zeros({3}), batch.ones({2})}, false),
                         doctest::Contains("'twice': two updates for position 1 with reduction 'none'"),
                         InvalidArgument);
  }
  {
    GraphBuilder g(16);
    g.input("x", {3}).input("u", {1}).output("y", {3});
    g.ints("at", {1}, {0});
    auto& n = g.node("ScatterElements", {"x", "at", "u"}, {"y"}, "largest");
    GraphBuilder::attr_s(n, "reduction", "max");
    CHECK_THROWS_WITH_AS(onnx::load(g.write(dir / "max.onnx"), "max"),
                         doctest::Contains("ScatterElements 'largest': reduction 'max' is not supported"),
                         InvalidArgument);
  }
}

TEST_CASE("onnx ReverseSequence: each entry's first steps reversed, the gradient following them") {
  test::TempFolder dir("reverse");
  GraphBuilder g(10);
  g.input("x", {3, 2}).output("y", {3, 2});  // [time, batch]
  g.ints("lens", {2}, {3, 2});
  g.node("ReverseSequence", {"x", "lens"}, {"y"}, "back");
  onnx::Imported net = onnx::load(g.write(dir / "reverse.onnx"), "reverse");
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.arange(0.0, 6.0).reshape({3, 2});  // entry 0: 0 2 4, entry 1: 1 3 5
  x.set_requires_gradient(true);
  const NDArray y = forward_with_gradient(net, NDList{x}, batch.arange(1.0, 7.0).reshape({3, 2}));
  CHECK(y.to_vector<float>() == std::vector<float>{4, 3, 2, 1, 0, 5});
  CHECK(x.gradient().to_vector<float>() == std::vector<float>{5, 4, 3, 2, 1, 6});
  NDManager other = NDManager::new_base_manager("other");
  GraphBuilder bad(10);
  bad.input("x", {3, 2}).output("y", {3, 2});
  bad.ints("lens", {2}, {4, 1});
  bad.node("ReverseSequence", {"x", "lens"}, {"y"}, "long");
  onnx::Imported too_long = onnx::load(bad.write(dir / "long.onnx"), "long");
  CHECK_THROWS_WITH_AS(too_long.model.block().forward(NDList{other.zeros({3, 2})}, false),
                       doctest::Contains("'long': sequence_lens[0] is 4, outside [0, 3]"), InvalidArgument);
}

namespace {

// One Einsum node over graph inputs a and b (or a alone).
onnx::Imported einsum_net(const test::TempFolder& dir, const std::string& equation, std::vector<std::int64_t> a,
                          std::vector<std::int64_t> b, std::vector<std::int64_t> y) {
  const bool two = !b.empty();
  GraphBuilder g(12);
  g.input("a", std::move(a));
  if (two) g.input("b", std::move(b));
  g.output("y", std::move(y));
  auto& n = g.node("Einsum", two ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{"a"}, {"y"}, "einsum");
  GraphBuilder::attr_s(n, "equation", equation);
  return onnx::load(g.write(dir / "einsum.onnx"), "einsum");
}

}  // namespace

TEST_CASE("onnx Einsum: a batched product and a diagonal, with the gradients of the same ops by hand") {
  test::TempFolder dir("einsum");
  NDManager batch = NDManager::new_base_manager("batch");
  {
    onnx::Imported net = einsum_net(dir, "bij, bjk -> bik", {2, 3, 4}, {2, 4, 5}, {2, 3, 5});
    NDArray a = batch.arange(0.0, 24.0).reshape({2, 3, 4}).mul(0.1), b = batch.arange(0.0, 40.0).reshape({2, 4, 5});
    a.set_requires_gradient(true);
    const NDArray y = forward_with_gradient(net, NDList{a, b});
    const std::vector<float> expected = a.matmul(b).to_vector<float>(), got = y.to_vector<float>();
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]));
    // d(sum(a b))/da = ones · bᵀ: row sums of b's rows.
    const std::vector<float> grad = a.gradient().to_vector<float>();
    const std::vector<float> by_hand = batch.ones({2, 3, 5}).matmul(b.transpose({0, 2, 1})).to_vector<float>();
    for (std::size_t i = 0; i < grad.size(); ++i) CHECK(grad[i] == doctest::Approx(by_hand[i]));
  }
  {
    onnx::Imported net = einsum_net(dir, "ii->i", {3, 3}, {}, {3});
    NDArray a = batch.arange(0.0, 9.0).reshape({3, 3});
    a.set_requires_gradient(true);
    const NDArray y = forward_with_gradient(net, NDList{a});
    CHECK(y.to_vector<float>() == std::vector<float>{0, 4, 8});
    CHECK(a.gradient().to_vector<float>() == std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1});
  }
}

TEST_CASE("onnx Einsum: an equation that does not fit its inputs is an error naming the node and the equation") {
  test::TempFolder dir("einsum_bad");
  NDManager batch = NDManager::new_base_manager("batch");
  onnx::Imported wrong_rank = einsum_net(dir, "ijk->i", {2, 3}, {}, {2});
  CHECK_THROWS_WITH_AS(wrong_rank.model.block().forward(NDList{batch.zeros({2, 3})}, false),
                       doctest::Contains("'einsum': equation 'ijk->i': term 'ijk' does not fit input 0 of rank 2"),
                       InvalidArgument);
  onnx::Imported two_terms = einsum_net(dir, "ij,jk->ik", {2, 3}, {}, {2, 3});
  CHECK_THROWS_WITH_AS(two_terms.model.block().forward(NDList{batch.zeros({2, 3})}, false),
                       doctest::Contains("2 operand terms for 1 inputs"), InvalidArgument);
  onnx::Imported digit = einsum_net(dir, "ij->i0", {2, 3}, {}, {2, -1});
  CHECK_THROWS_WITH_AS(digit.model.block().forward(NDList{batch.zeros({2, 3})}, false),
                       doctest::Contains("output '0' is not a letter"), InvalidArgument);
}

TEST_CASE("onnx BitShift of uint8 keeps the low 8 bits; MaxPool of uint8 is exact") {
  test::TempFolder dir("uint8");
  NDManager batch = NDManager::new_base_manager("batch");
  const NDArray x = batch.create<float>({200, 3, 255, 1}, Shape{4}).to_type(DataType::uint8);
  const NDArray by = batch.create<float>({1, 1, 8, 9}, Shape{4}).to_type(DataType::uint8);
  for (const char* direction : {"LEFT", "RIGHT"}) {
    CAPTURE(direction);
    GraphBuilder g(11);
    g.input("x", {4}, ::onnx::TensorProto::UINT8).input("by", {4}, ::onnx::TensorProto::UINT8);
    g.output("y", {4}, ::onnx::TensorProto::UINT8);
    GraphBuilder::attr_s(g.node("BitShift", {"x", "by"}, {"y"}, "shift"), "direction", direction);
    onnx::Imported net = onnx::load(g.write(dir / "shift.onnx"), "shift");
    const std::vector<std::uint8_t> y = net.model.block().forward(NDList{x, by}, false).head().to_vector<std::uint8_t>();
    if (std::string(direction) == "LEFT") CHECK(y == std::vector<std::uint8_t>{144, 6, 0, 0});
    else CHECK(y == std::vector<std::uint8_t>{100, 1, 0, 0});
  }
  GraphBuilder g(12);
  g.input("x", {1, 1, 2, 2}, ::onnx::TensorProto::UINT8).output("y", {1, 1, 1, 1}, ::onnx::TensorProto::UINT8);
  GraphBuilder::attr(g.node("MaxPool", {"x"}, {"y"}, "pool"), "kernel_shape", std::vector<std::int64_t>{2, 2});
  onnx::Imported net = onnx::load(g.write(dir / "pool.onnx"), "pool");
  const NDArray image = batch.create<float>({7, 255, 254, 0}, Shape{1, 1, 2, 2}).to_type(DataType::uint8);
  CHECK(net.model.block().forward(NDList{image}, false).head().to_vector<std::uint8_t>() == std::vector<std::uint8_t>{255});
}

TEST_CASE("onnx MaxPool's indices: flat positions in the input, row or column major, ties to the first") {
  test::TempFolder dir("argmax");
  NDManager batch = NDManager::new_base_manager("batch");
  // Two planes of 2 x 3; windows 2 x 2, stride 1, one column of padding on the right.
  const NDArray x = batch.create<float>({1, 9, 9, 4, 2, 0, 5, 5, 1, 6, 7, 8}, Shape{1, 2, 2, 3});
  for (std::int64_t order : {0, 1}) {
    CAPTURE(order);
    GraphBuilder g(12);
    g.input("x", {1, 2, 2, 3}).output("y", {1, 2, 1, 3}).output("at", {1, 2, 1, 3}, ::onnx::TensorProto::INT64);
    auto& n = g.node("MaxPool", {"x"}, {"y", "at"}, "pool");
    GraphBuilder::attr(n, "kernel_shape", std::vector<std::int64_t>{2, 2});
    GraphBuilder::attr(n, "pads", std::vector<std::int64_t>{0, 0, 0, 1});
    GraphBuilder::attr(n, "storage_order", order);
    onnx::Imported net = onnx::load(g.write(dir / "argmax.onnx"), "argmax");
    const NDList out = net.model.block().forward(NDList{x}, false);
    CHECK(out[0].to_vector<float>() == std::vector<float>{9, 9, 9, 7, 8, 8});
    // Row major: plane 0's 9s at 1 (the first of the tie in window 1) and 2; plane 1's 7 at 6 + 4, 8 at 6 + 5.
    const std::vector<std::int64_t> row_major{1, 1, 2, 10, 11, 11}, column_major{2, 2, 4, 9, 11, 11};
    CHECK(out[1].to_vector<std::int64_t>() == (order == 0 ? row_major : column_major));
  }
}

TEST_CASE("onnx AveragePool's ceil_mode: the last windows average what they cover; with padding it is refused") {
  test::TempFolder dir("avg_ceil");
  GraphBuilder g;
  g.input("x", {1, 1, 3, 3}).output("y", {1, 1, 2, 2});
  auto& n = g.node("AveragePool", {"x"}, {"y"}, "ceil");
  GraphBuilder::attr(n, "kernel_shape", std::vector<std::int64_t>{2, 2});
  GraphBuilder::attr(n, "strides", std::vector<std::int64_t>{2, 2});
  GraphBuilder::attr(n, "ceil_mode", std::int64_t{1});
  onnx::Imported net = onnx::load(g.write(dir / "ceil.onnx"), "ceil");
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.arange(0.0, 9.0).reshape({1, 1, 3, 3});
  x.set_requires_gradient(true);
  const NDArray y = forward_with_gradient(net, NDList{x});
  CHECK(y.to_vector<float>() == std::vector<float>{2, 3.5f, 6.5f, 8});
  CHECK(x.gradient().to_vector<float>() == std::vector<float>{0.25f, 0.25f, 0.5f, 0.25f, 0.25f, 0.5f, 0.5f, 0.5f, 1});
  GraphBuilder padded;
  padded.input("x", {1, 1, 3, 3}).output("y", {1, 1, 2, 2});
  auto& p = padded.node("AveragePool", {"x"}, {"y"}, "padded_ceil");
  GraphBuilder::attr(p, "kernel_shape", std::vector<std::int64_t>{2, 2});
  GraphBuilder::attr(p, "strides", std::vector<std::int64_t>{2, 2});
  GraphBuilder::attr(p, "pads", std::vector<std::int64_t>{1, 1, 0, 0});
  GraphBuilder::attr(p, "ceil_mode", std::int64_t{1});
  CHECK_THROWS_WITH_AS(onnx::load(padded.write(dir / "padded.onnx"), "padded"),
                       doctest::Contains("AveragePool 'padded_ceil': AveragePool's ceil_mode with padding"),
                       InvalidArgument);
}

TEST_CASE("onnx: shapes that do not fit, at forward, name the node and what differs") {
  test::TempFolder dir("misfits");
  NDManager batch = NDManager::new_base_manager("batch");
  auto forward = [&](const GraphBuilder& g, const NDList& inputs) {
    onnx::Imported net = onnx::load(g.write(dir / "misfit.onnx"), "misfit");
    return net.model.block().forward(inputs, false);
  };
  {
    GraphBuilder g;
    g.input("x", {-1, -1}).output("y", {-1});
    g.ints("at", {3, 1}, {0, 1, 2});
    GraphBuilder::attr(g.node("GatherND", {"x", "at"}, {"y"}, "batched"), "batch_dims", std::int64_t{1});
    CHECK_THROWS_WITH_AS(forward(g, NDList{batch.zeros({2, 3})}), doctest::Contains("'batched': indices (3, 1) and data "
                                                                                    "(2, 3) differ on batch axis 0"),
                         ShapeMismatch);
  }
  {
    GraphBuilder g;
    g.input("x", {-1, -1}).input("u", {-1, -1}).output("y", {-1, -1});
    g.ints("at", {1, 2}, {0, 1});
    g.node("ScatterElements", {"x", "at", "u"}, {"y"}, "misfit_updates");
    CHECK_THROWS_WITH_AS(forward(g, NDList{batch.zeros({2, 3}), batch.zeros({1, 3})}),
                         doctest::Contains("'misfit_updates': indices (1, 2), updates (1, 3)"), ShapeMismatch);
  }
  {
    GraphBuilder g(10);
    g.input("x", {-1, -1}).output("y", {-1, -1});
    g.ints("lens", {3}, {1, 1, 1});
    g.node("ReverseSequence", {"x", "lens"}, {"y"}, "three_lens");
    CHECK_THROWS_WITH_AS(forward(g, NDList{batch.zeros({4, 2})}),
                         doctest::Contains("'three_lens': 3 sequence_lens for 2 batch entries"), ShapeMismatch);
  }
  {
    GraphBuilder g(12);
    g.input("a", {-1, -1}).input("b", {-1, -1}).output("y", {-1, -1});
    GraphBuilder::attr_s(g.node("Einsum", {"a", "b"}, {"y"}, "product"), "equation", "ij,jk->ik");
    CHECK_THROWS_WITH_AS(forward(g, NDList{batch.zeros({2, 3}), batch.zeros({4, 5})}),
                         doctest::Contains("'product': letter 'j' has lengths 3 and 4"), ShapeMismatch);
  }
  {
    GraphBuilder g(9);
    g.input("x", {1, 1, 2, 2}).output("y", {-1, -1, -1, -1});
    g.floats("scales", {4}, {1, 1, 0.5f, 1});
    g.node("Upsample", {"x", "scales"}, {"y"}, "shrink");
    CHECK_THROWS_WITH_AS(forward(g, NDList{batch.zeros({1, 1, 2, 2})}),
                         doctest::Contains("'shrink': scale 0.5 is below 1"), InvalidArgument);
  }
}

TEST_CASE("onnx: BitShift of another direction or dtype is refused at load, naming the node") {
  test::TempFolder dir("shift_refused");
  GraphBuilder up(11);
  up.input("x", {2}, ::onnx::TensorProto::UINT8).input("by", {2}, ::onnx::TensorProto::UINT8);
  up.output("y", {2}, ::onnx::TensorProto::UINT8);
  GraphBuilder::attr_s(up.node("BitShift", {"x", "by"}, {"y"}, "up"), "direction", "UP");
  CHECK_THROWS_WITH_AS(onnx::load(up.write(dir / "up.onnx"), "up"),
                       doctest::Contains("BitShift 'up': direction 'UP' is not LEFT or RIGHT"), InvalidArgument);
}

TEST_CASE("onnx: Celu, LRN and MeanVarianceNormalization pass a finite gradient back to their input") {
  for (const char* op : {"Celu", "LRN", "MeanVarianceNormalization"}) {
    CAPTURE(op);
    test::TempFolder dir("grad");
    GraphBuilder g;
    g.input("x", {1, 3, 2, 2}).output("y", {1, 3, 2, 2});
    auto& n = g.node(op, {"x"}, {"y"}, "op");
    if (std::string(op) == "LRN") GraphBuilder::attr(n, "size", std::int64_t{3});
    onnx::Imported net = onnx::load(g.write(dir / "op.onnx"), "op");
    NDManager batch = NDManager::new_base_manager("batch");
    NDArray x = batch.arange(-5.0, 7.0).reshape({1, 3, 2, 2}).mul(0.3);
    forward_with_gradient(net, x);
    const std::vector<float> grad = x.gradient().to_vector<float>();
    bool finite = true, nonzero = false;
    for (float v : grad) finite = finite && std::isfinite(v), nonzero = nonzero || v != 0;
    CHECK(finite);
    CHECK(nonzero);
  }
}

TEST_CASE("onnx: TopK's k past the axis and Compress's condition past the axis are errors naming the node") {
  test::TempFolder dir("bad");
  NDManager batch = NDManager::new_base_manager("batch");
  {
    GraphBuilder g;
    g.input("x", {2, 4}).output("values", {2, -1});
    g.ints("k", {1}, {5});
    g.node("TopK", {"x", "k"}, {"values", "indices"}, "too_many");
    onnx::Imported net = onnx::load(g.write(dir / "topk.onnx"), "topk");
    CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{batch.zeros({2, 4})}, false),
                         doctest::Contains("'too_many': k 5 for an axis of 4"), InvalidArgument);
  }
  {
    GraphBuilder g(11);
    g.input("x", {2, 2}).input("keep", {3}, ::onnx::TensorProto::BOOL).output("y", {-1, 2});
    auto& n = g.node("Compress", {"x", "keep"}, {"y"}, "rows");
    GraphBuilder::attr(n, "axis", std::int64_t{0});
    onnx::Imported net = onnx::load(g.write(dir / "compress.onnx"), "compress");
    const NDArray keep = batch.create<float>({1, 0, 1}, Shape{3}).gt(0.5);
    CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{batch.zeros({2, 2}), keep}, false),
                         doctest::Contains("'rows': a condition of 3 for an axis of 2"), InvalidArgument);
  }
}

TEST_CASE("onnx: a K of two values, and a scale past any array's length, are errors naming the node") {
  test::TempFolder dir("bad_args");
  NDManager batch = NDManager::new_base_manager("batch");
  {
    GraphBuilder g;
    g.input("x", {2, 4}).output("values", {2, -1});
    g.ints("k", {2}, {1, 2});
    g.node("TopK", {"x", "k"}, {"values", "indices"}, "two_ks");
    onnx::Imported net = onnx::load(g.write(dir / "topk.onnx"), "topk");
    CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{batch.zeros({2, 4})}, false),
                         doctest::Contains("'two_ks': K holds 2 values"), InvalidArgument);
  }
  {
    GraphBuilder g(9);
    g.input("x", {1, 1, 2, 2}).output("y", {1, 1, -1, -1});
    g.floats("scales", {4}, {1, 1, 1e30f, 2});
    g.node("Upsample", {"x", "scales"}, {"y"}, "huge");
    onnx::Imported net = onnx::load(g.write(dir / "upsample.onnx"), "upsample");
    CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{batch.zeros({1, 1, 2, 2})}, false),
                         doctest::Contains("'huge': scale 1.0000000150474662e+30 makes an axis of"), InvalidArgument);
  }
}

TEST_CASE("onnx: LRN of size 0, and Upsample's linear mode, are refused naming the node") {
  test::TempFolder dir("refused");
  {
    GraphBuilder g;
    g.input("x", {1, 3, 2, 2}).output("y", {1, 3, 2, 2});
    GraphBuilder::attr(g.node("LRN", {"x"}, {"y"}, "no_size"), "size", std::int64_t{0});
    onnx::Imported net = onnx::load(g.write(dir / "lrn.onnx"), "lrn");
    NDManager batch = NDManager::new_base_manager("batch");
    CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{batch.zeros({1, 3, 2, 2})}, false),
                         doctest::Contains("'no_size': LRN needs size >= 1 (it is 0)"), InvalidArgument);
  }
  {
    GraphBuilder g(9);
    g.input("x", {1, 1, 2, 2}).output("y", {1, 1, 4, 4});
    g.floats("scales", {4}, {1, 1, 2, 2});
    auto& n = g.node("Upsample", {"x", "scales"}, {"y"}, "smooth");
    GraphBuilder::attr_s(n, "mode", "linear");
    CHECK_THROWS_WITH_AS(onnx::load(g.write(dir / "upsample.onnx"), "upsample"),
                         doctest::Contains("Upsample mode 'linear' is not supported"), InvalidArgument);
  }
}

TEST_CASE("onnx MaxUnpool: x's elements at their flat positions, the last of two for one position, with gradients") {
  test::TempFolder dir("unpool");
  GraphBuilder g(11);
  g.input("x", {2, 1, 1, 2}).input("i", {2, 1, 1, 2}, ::onnx::TensorProto::INT64).output("y", {2, 1, 2, 3});
  g.ints("shape", {4}, {2, 1, 2, 3});
  auto& n = g.node("MaxUnpool", {"x", "i", "shape"}, {"y"}, "unpool");
  GraphBuilder::attr(n, "kernel_shape", std::vector<std::int64_t>{2, 2});
  GraphBuilder::attr(n, "strides", std::vector<std::int64_t>{2, 2});
  onnx::Imported net = onnx::load(g.write(dir / "unpool.onnx"), "unpool");
  NDManager batch = NDManager::new_base_manager("batch");
  NDArray x = batch.create<float>({1, 2, 3, 4}, Shape{2, 1, 1, 2});
  x.set_requires_gradient(true);
  // Image 0's positions 4 and 1; image 1's 7 twice: its second element (4) wins.
  const NDArray at = batch.create<std::int64_t>({4, 1, 7, 7}, Shape{2, 1, 1, 2});
  const NDArray weights = batch.create<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, Shape{2, 1, 2, 3});
  const NDArray y = forward_with_gradient(net, NDList{x, at}, weights);
  CHECK(y.to_vector<float>() == std::vector<float>{0, 2, 0, 0, 1, 0, 0, 4, 0, 0, 0, 0});
  CHECK(x.gradient().to_vector<float>() == std::vector<float>{5, 2, 0, 8});

  // Shapes the graph leaves open, checked by the kernel.
  GraphBuilder hostile(11);
  hostile.input("x", {-1, -1, -1, -1}).input("i", {-1, -1, -1, -1}, ::onnx::TensorProto::INT64);
  hostile.input("shape", {-1}, ::onnx::TensorProto::INT64).output("y", {-1, -1, -1, -1});
  auto& h = hostile.node("MaxUnpool", {"x", "i", "shape"}, {"y"}, "unpool");
  GraphBuilder::attr(h, "kernel_shape", std::vector<std::int64_t>{2, 2});
  onnx::Imported open_shape = onnx::load(hostile.write(dir / "hostile.onnx"), "hostile");
  auto unpool = [&](const NDArray& indices, const std::vector<std::int64_t>& dims) {
    return open_shape.model.block().forward(
        NDList{x, indices, batch.create<std::int64_t>(dims, Shape{std::int64_t(dims.size())})}, false);
  };
  for (const auto& dims : {std::vector<std::int64_t>{2, 1, -2, 3}, std::vector<std::int64_t>{2, 1, 1LL << 31, 1LL << 31}})
    CHECK_THROWS_WITH_AS(unpool(at, dims), doctest::Contains("MaxUnpool 'unpool': the output"), ShapeMismatch);
  // 2^40 output elements, the most a shape may say: their positions (8 TiB)
  // cannot be allocated. Not under a sanitizer, whose allocator stops the
  // process at such a request, nor where the kernel grants any mapping
  // (overcommit_memory 1), where the vector's fill would exhaust the host.
#if !NDGC_ASAN && !NDGC_TSAN
  std::ifstream overcommit("/proc/sys/vm/overcommit_memory");
  int mode = 1;
  if (overcommit >> mode && mode != 1)
    CHECK_THROWS_WITH_AS(unpool(at, {2, 1, 1LL << 20, 1LL << 19}),
                         doctest::Contains("MaxUnpool 'unpool': no host memory for the positions of 1099511627776 "
                                           "elements"),
                         OutOfMemory);
  else
    MESSAGE("MaxUnpool's out-of-memory case skipped: overcommit_memory is 1 here");
#endif
  CHECK_THROWS_WITH_AS(unpool(at, {2, 1, 6}), doctest::Contains("output_shape has 3 dims for an input of rank 4"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(unpool(at, {2, 2, 2, 3}), doctest::Contains("must keep the input's batch and channels"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(unpool(at.reshape(Shape{2, 1, 2, 1}), {2, 1, 2, 3}),
                       doctest::Contains("MaxUnpool 'unpool': indices (2, 1, 2, 1) and input (2, 1, 1, 2) differ"),
                       ShapeMismatch);

  const NDArray outside = batch.create<std::int64_t>({4, 1, 7, 12}, Shape{2, 1, 1, 2});
  CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{x, outside}, false),
                       doctest::Contains("MaxUnpool 'unpool': index 12 is outside the output (2, 1, 2, 3)"),
                       InvalidArgument);
}

}  // namespace ndgc
