// What onnx::load refuses, and how: DataError for files that are not valid
// models, InvalidArgument listing every node this build cannot run; nothing
// is left allocated after either.
#include <doctest/doctest.h>

#include <ndgc/ndgc.hpp>
#include <ndgc/onnx.hpp>

#include "graph_builder.hpp"

namespace ndgc {
namespace {

using test::GraphBuilder;

GraphBuilder relu_graph() {
  GraphBuilder g;
  g.input("x", {2}).output("y", {2});
  g.floats("w", {2}, {1, 2});
  g.node("Mul", {"x", "w"}, {"m"}, "scale");
  g.node("Relu", {"m"}, {"y"}, "act");
  return g;
}

// Runs `load` and checks that it threw E with `text` in its message and left no array behind.
template <class E>
void check_refused(const std::filesystem::path& file, const std::string& text) {
  const std::uint64_t before = debug::live_array_count();
  CHECK_THROWS_WITH_AS(onnx::load(file, "bad"), doctest::Contains(text.c_str()), E);
  CHECK(debug::live_array_count() == before);
}

}  // namespace

TEST_CASE("onnx::load: a missing, garbage or truncated file is DataError naming the file") {
  test::TempFolder dir("garbage");
  check_refused<DataError>(dir / "missing.onnx", "missing.onnx");
  std::ofstream(dir / "garbage.onnx") << "this is not a protobuf message at all \xff\xff\xff";
  check_refused<DataError>(dir / "garbage.onnx", "garbage.onnx");
  const std::string bytes = relu_graph().bytes();
  std::ofstream(dir / "cut.onnx", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  check_refused<DataError>(dir / "cut.onnx", "cut.onnx");
}

TEST_CASE("onnx::load: a model the checker refuses is DataError with the checker's message") {
  test::TempFolder dir("checker");
  GraphBuilder g = relu_graph();
  g.node("Relu", {"nowhere"}, {"z"}, "dangling");
  check_refused<DataError>(g.write(dir / "dangling.onnx"), "checker refused it");
}

TEST_CASE("onnx::load: every node this build cannot run is listed, with op type, name and reason") {
  test::TempFolder dir("refused");
  GraphBuilder g;
  g.input("x", {2, 2}).output("y", {2, 2});
  g.node("LpNormalization", {"x"}, {"a"}, "first_norm");
  g.node("Relu", {"a"}, {"b"}, "fine");
  g.node("LpNormalization", {"b"}, {"y"}, "second_norm");
  const std::filesystem::path file = g.write(dir / "unknown.onnx");
  check_refused<InvalidArgument>(file, "2 node(s) this build cannot run");
  try {
    onnx::load(file, "unknown");
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    CHECK(m.find("LpNormalization 'first_norm': ndgc has no kernel for this op type") != std::string::npos);
    CHECK(m.find("LpNormalization 'second_norm'") != std::string::npos);
    CHECK(m.find("fine") == std::string::npos);
  }
}

TEST_CASE("onnx::load: attributes and dtypes ndgc cannot run are refused at load") {
  test::TempFolder dir("attrs");
  GraphBuilder pool;
  pool.input("x", {1, 1, 4, 4}).output("y", {1, 1, 2, 2});
  auto& n = pool.node("AveragePool", {"x"}, {"y"}, "ceil");
  GraphBuilder::attr(n, "kernel_shape", std::vector<std::int64_t>{2, 2});
  GraphBuilder::attr(n, "ceil_mode", std::int64_t{1});
  GraphBuilder::attr(n, "strides", std::vector<std::int64_t>{3, 3});
  check_refused<InvalidArgument>(pool.write(dir / "ceil.onnx"),
                                 "AveragePool 'ceil': AveragePool's ceil_mode with padding, or with a stride past the kernel");

  GraphBuilder padded;  // ONNX Runtime's rule: a pool's pads are smaller than its kernel
  padded.input("x", {1, 1, 4, 4}).output("y", {1, 1, 8, 4});
  auto& pp = padded.node("AveragePool", {"x"}, {"y"}, "wide");
  GraphBuilder::attr(pp, "kernel_shape", std::vector<std::int64_t>{3, 1});
  GraphBuilder::attr(pp, "pads", std::vector<std::int64_t>{3, 0, 3, 0});
  check_refused<InvalidArgument>(padded.write(dir / "padded.onnx"),
                                 "AveragePool 'wide': pads (3 and 3) must be smaller than the kernel (3)");

  GraphBuilder unsigned16;
  unsigned16.input("x", {2}, ::onnx::TensorProto::UINT16).output("y", {2}, ::onnx::TensorProto::UINT16);
  unsigned16.node("Relu", {"x"}, {"y"}, "r");
  check_refused<InvalidArgument>(unsigned16.write(dir / "uint16.onnx"), "UINT16");

  GraphBuilder empty_kernel;  // a weight of no columns: a kernel of width 0
  empty_kernel.input("x", {1, 1, 4, 4}).output("y", {1, 1, 4, 5});
  empty_kernel.floats("w", {1, 1, 1, 0}, {});
  empty_kernel.node("Conv", {"x", "w"}, {"y"}, "flat");
  check_refused<InvalidArgument>(empty_kernel.write(dir / "empty_kernel.onnx"),
                                 "Conv 'flat': kernel 0, stride 1 and dilation 1 must be positive");

  GraphBuilder hyper;
  hyper.input("x", {1, 1, 4, 4, 4, 4}).output("y", {1, 1, 2, 2, 2, 2});
  auto& h = hyper.node("MaxPool", {"x"}, {"y"}, "tesseract");
  GraphBuilder::attr(h, "kernel_shape", std::vector<std::int64_t>{2, 2, 2, 2});
  GraphBuilder::attr(h, "strides", std::vector<std::int64_t>{2, 2, 2, 2});
  check_refused<InvalidArgument>(hyper.write(dir / "hyper.onnx"),
                                 "MaxPool 'tesseract': 4 spatial axes; ndgc runs 1, 2 and 3");

  GraphBuilder volume;
  volume.input("x", {1, 1, 4, 4, 4}).output("y", {1, 1, 2, 2, 2}).output("at", {1, 1, 2, 2, 2}, ::onnx::TensorProto::INT64);
  auto& d = volume.node("MaxPool", {"x"}, {"y", "at"}, "cube");
  GraphBuilder::attr(d, "kernel_shape", std::vector<std::int64_t>{2, 2, 2});
  GraphBuilder::attr(d, "strides", std::vector<std::int64_t>{2, 2, 2});
  GraphBuilder::attr(d, "storage_order", std::int64_t{1});
  check_refused<InvalidArgument>(volume.write(dir / "volume.onnx"),
                                 "MaxPool 'cube': MaxPool's column-major indices (storage_order 1) over 3 spatial");
}

TEST_CASE("onnx::load: hostile but valid models are errors, never crashes") {
  test::TempFolder dir("hostile");
  SUBCASE("an initializer whose data is shorter than its shape") {
    GraphBuilder g;
    g.input("x", {4}).output("y", {4});
    g.floats("w", {4}, {1, 2});  // 2 values for 4 elements
    g.node("Add", {"x", "w"}, {"y"});
    const std::filesystem::path file = g.write(dir / "short.onnx");
    const std::uint64_t before = debug::live_array_count();
    CHECK_THROWS_AS(onnx::load(file, "short"), DataError);
    CHECK(debug::live_array_count() == before);
  }
  SUBCASE("dims whose product overflows") {
    GraphBuilder g;
    g.input("x", {1}).output("y", {1});
    auto* t = g.model().mutable_graph()->add_initializer();
    t->set_name("huge");
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (int k = 0; k < 4; ++k) t->add_dims(std::int64_t{1} << 40);
    t->set_raw_data("1234");
    g.node("Add", {"x", "huge"}, {"y"});
    const std::filesystem::path file = g.write(dir / "overflow.onnx");
    CHECK_THROWS_AS(onnx::load(file, "overflow"), Error);
  }
  SUBCASE("a graph with a cycle") {
    GraphBuilder g;
    g.input("x", {2}).output("y", {2});
    g.node("Add", {"x", "b"}, {"a"}, "one");
    g.node("Relu", {"a"}, {"b"}, "two");
    g.node("Identity", {"b"}, {"y"}, "three");
    CHECK_THROWS_AS(onnx::load(g.write(dir / "cycle.onnx"), "cycle"), DataError);
  }
  SUBCASE("LayerNormalization whose axis misses its input's rank: DataError before libonnx's inference reads past "
          "the shape") {
    for (std::int64_t axis : {-1, 3, -4}) {
      CAPTURE(axis);
      GraphBuilder g(17);
      g.input("x", axis == -1 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{2, 3, 4}).output("y", {});
      g.floats("scale", {4}, {1, 1, 1, 1});
      auto& n = g.node("LayerNormalization", {"x", "scale"}, {"y"}, "ln");
      if (axis != -1) GraphBuilder::attr(n, "axis", axis);
      check_refused<DataError>(g.write(dir / "ln.onnx"), "(LayerNormalization) has axis " + std::to_string(axis));
    }
  }
  SUBCASE("an attribute out of range fails at forward with the node's name, not a crash") {
    GraphBuilder g;
    g.input("x", {2, 3}).output("y", {6});
    auto& n = g.node("Flatten", {"x"}, {"y"}, "flat");
    GraphBuilder::attr(n, "axis", std::int64_t{7});
    try {
      onnx::Imported net = onnx::load(g.write(dir / "axis.onnx"), "axis");
      NDManager batch = NDManager::new_base_manager("batch");
      CHECK_THROWS_AS(net.model.block().forward(NDList{batch.zeros({2, 3})}, false), Error);
    } catch (const Error&) {
      // refused at load (the checker or shape inference) is fine too
    }
  }
}

TEST_CASE("onnx::load: external-data initializers are read from beside the model; escaping paths are refused") {
  test::TempFolder dir("external");
  const std::vector<float> w{1.5f, -2.0f};
  {
    std::ofstream data(dir / "weights.bin", std::ios::binary);
    data.write("pad!", 4);
    data.write(reinterpret_cast<const char*>(w.data()), 8);
  }
  auto graph_with = [&](const std::string& location, const std::string& length) {
    GraphBuilder g;
    g.input("x", {2}).output("y", {2});
    auto* t = g.model().mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(::onnx::TensorProto::FLOAT);
    t->add_dims(2);
    t->set_data_location(::onnx::TensorProto::EXTERNAL);
    for (auto [k, v] : {std::pair<std::string, std::string>{"location", location}, {"offset", "4"}, {"length", length}}) {
      auto* e = t->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    g.node("Mul", {"x", "w"}, {"y"});
    return g;
  };
  onnx::Imported net = onnx::load(graph_with("weights.bin", "8").write(dir / "ext.onnx"), "ext");
  NDManager batch = NDManager::new_base_manager("batch");
  CHECK(net.model.block().forward(NDList{batch.ones({2})}, false).head().to_vector<float>() == w);
  check_refused<DataError>(graph_with("../weights.bin", "8").write(dir / "escape.onnx"), "inside the model's folder");
  check_refused<DataError>(graph_with("weights.bin", "800").write(dir / "long.onnx"), "runs past the end");
}

}  // namespace ndgc
