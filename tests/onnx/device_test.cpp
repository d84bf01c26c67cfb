// ONNX graphs on a GPU, on every machine: tests/sim_gpu.hpp's simulated GPU
// runs each kernel with the CPU engine, checks that every view a device kernel
// is handed lies in "device" memory (Note [Simulated residency]) and counts
// the copies between host and device. So these tests catch what a real GPU
// would turn into an illegal address or a silent synchronisation: a host
// buffer in a device kernel, a value read on the host where the graph's
// shapes alone decide it.
#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include <ndgc/ndgc.hpp>
#include <ndgc/onnx.hpp>

#include "conformance.hpp"
#include "forward_backward.hpp"
#include "graph_builder.hpp"
#include "sim_gpu.hpp"
#include "test_util.hpp"

namespace ndgc {
namespace {

using test::GraphBuilder;
namespace conf = test::onnx_conformance;

const std::filesystem::path kTestData = NDGC_ONNX_TESTDATA;

std::vector<float> values(int n, float scale) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[std::size_t(i)] = scale * float((i * 37) % 17 - 8) / 8.0f;
  return v;
}

// A residual block as exporters write it, batch dynamic: Conv → BatchNorm →
// Relu → MaxPool, a skip connection, and the flatten before the classifier
// as Shape → Gather → Unsqueeze → Concat → Reshape, which the batch axis
// keeps from folding at load. x [N, 2, 8, 8] → y [N, 3].
GraphBuilder residual_graph() {
  GraphBuilder g;
  g.input("x", {-1, 2, 8, 8}).output("y", {-1, 3});
  g.floats("conv.weight", {4, 2, 3, 3}, values(72, 0.3f)).floats("conv.bias", {4}, values(4, 0.1f));
  g.floats("bn.scale", {4}, {1.0f, 0.5f, 1.5f, 0.8f}).floats("bn.bias", {4}, values(4, 0.2f));
  g.floats("bn.mean", {4}, values(4, 0.05f)).floats("bn.var", {4}, {1.0f, 2.0f, 0.5f, 1.5f});
  g.floats("skip.weight", {4, 2, 1, 1}, values(8, 0.5f));
  g.floats("fc.weight", {3, 64}, values(192, 0.1f)).floats("fc.bias", {3}, values(3, 0.1f));
  g.ints("zero", {}, {0}).ints("axes", {1}, {0}).ints("rest", {1}, {-1});
  auto& conv = g.node("Conv", {"x", "conv.weight", "conv.bias"}, {"c"}, "conv");
  GraphBuilder::attr(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  g.node("BatchNormalization", {"c", "bn.scale", "bn.bias", "bn.mean", "bn.var"}, {"b"}, "bn");
  g.node("Conv", {"x", "skip.weight"}, {"s"}, "skip");
  g.node("Add", {"b", "s"}, {"sum"}, "add");
  g.node("Relu", {"sum"}, {"r"}, "relu");
  auto& pool = g.node("MaxPool", {"r"}, {"p"}, "pool");
  GraphBuilder::attr(pool, "kernel_shape", std::vector<std::int64_t>{2, 2});
  GraphBuilder::attr(pool, "strides", std::vector<std::int64_t>{2, 2});
  g.node("Shape", {"p"}, {"shape"}, "shape");
  g.node("Gather", {"shape", "zero"}, {"n"}, "n");
  g.node("Unsqueeze", {"n", "axes"}, {"n1"}, "n1");
  g.node("Concat", {"n1", "rest"}, {"flat_shape"}, "flat_shape");
  GraphBuilder::attr(g.model().mutable_graph()->mutable_node()->rbegin()[0], "axis", std::int64_t{0});
  g.node("Reshape", {"p", "flat_shape"}, {"flat"}, "flatten");
  auto& fc = g.node("Gemm", {"flat", "fc.weight", "fc.bias"}, {"y"}, "fc");
  GraphBuilder::attr(fc, "transB", std::int64_t{1});
  return g;
}

// Gathers of a floating initializer, as exporters write a sequence's last
// step: a constant index in range, and -1 (made positive on the host).
// x [N, 4] → y = x × (Gather(w, {3, 0, 3}) ; Gather(w, -1)) [N, 3].
GraphBuilder gather_graph() {
  GraphBuilder g;
  g.input("x", {-1, 4}).output("y", {-1, 3});
  g.floats("w", {4, 3}, values(12, 0.5f)).ints("picks", {3}, {3, 0, 3}).ints("last", {1}, {-1});
  g.node("Gather", {"w", "picks"}, {"head"}, "head");
  g.node("Gather", {"w", "last"}, {"tail"}, "tail");
  g.node("Concat", {"head", "tail"}, {"table"}, "table");
  GraphBuilder::attr(g.model().mutable_graph()->mutable_node()->rbegin()[0], "axis", std::int64_t{0});
  g.node("MatMul", {"x", "table"}, {"y"}, "product");
  return g;
}

void check_near(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5).scale(1));
}

}  // namespace

TEST_CASE("ONNX on a simulated GPU: a residual block's forward pass copies nothing to or from the host") {
  test::TempFolder dir("device");
  const auto file = residual_graph().write(dir / "residual.onnx");
  test::SimGpu gpu(test::SimGpu::kDefaultBudget, test::SimGpu::Kernels::layers);
  onnx::Imported net = onnx::load(file, "residual", Device::gpu(0));
  for (auto& [name, p] : net.model.parameters()) CHECK(p->array().device() == Device::gpu(0));
  NDManager batch = net.model.manager().new_sub_manager("batch");
  for (std::int64_t n : {3, 5}) {  // two batch sizes: the flatten's shape is computed per call
    NDArray x = batch.random_normal({n, 2, 8, 8});
    gpu.reset_counts();
    NDArray y = net.model.block().forward(NDList{x}, false).head();
    CHECK(gpu.to_host_calls() == 0);
    CHECK(gpu.from_host_calls() == 0);
    CHECK(y.shape() == Shape{n, 3});
  }
  CHECK(gpu.engine().residency_violations() == 0);
}

TEST_CASE("ONNX on a simulated GPU: outputs and every initializer's gradient as on the CPU") {
  test::TempFolder dir("device_grads");
  const auto file = residual_graph().write(dir / "residual.onnx");
  const std::vector<float> input = values(4 * 128, 1.0f);
  auto make_input = [&](const ManagerRef& m) { return m.create(input, Shape{4, 2, 8, 8}); };
  const test::PassResult host = test::forward_backward(file, Device::cpu(), make_input);
  test::SimGpu gpu(test::SimGpu::kDefaultBudget, test::SimGpu::Kernels::layers);
  const test::PassResult device = test::forward_backward(file, Device::gpu(0), make_input);
  check_near(device.output, host.output);
  CHECK(device.gradients.size() == 7);  // all but the batch norm's running statistics
  for (const auto& entry : host.gradients) {  // INFO captures the name: no structured binding (clang 14)
    const std::string& name = entry.first;
    INFO(name);
    check_near(device.gradients.at(name), entry.second);
  }
  CHECK(gpu.engine().residency_violations() == 0);
  gc::poll();
  CHECK(gpu.bytes_in_use() == 0);
}

TEST_CASE("ONNX on a simulated GPU: gathers of floating data wait for no index check, forward or backward") {
  test::TempFolder dir("device_gather");
  const auto file = gather_graph().write(dir / "gather.onnx");
  const std::vector<float> input = values(8, 1.0f);
  auto make_input = [&](const ManagerRef& m) { return m.create(input, Shape{2, 4}); };
  const test::PassResult host = test::forward_backward(file, Device::cpu(), make_input);
  test::SimGpu gpu(test::SimGpu::kDefaultBudget, test::SimGpu::Kernels::layers);
  const test::PassResult device = test::forward_backward(file, Device::gpu(0), make_input);
  CHECK(gpu.index_checks() == 0);
  check_near(device.output, host.output);
  REQUIRE(device.gradients.count("w") == 1);
  check_near(device.gradients.at("w"), host.gradients.at("w"));
  // rows 1 and 2 are gathered by no index: their gradients are zero
  for (std::size_t k = 3; k < 9; ++k) CHECK(device.gradients.at("w")[k] == 0.0f);
  CHECK(gpu.engine().residency_violations() == 0);
}

TEST_CASE("ONNX conformance on a simulated GPU: every case that passes on the CPU passes, no host buffer in a kernel") {
  if (!std::filesystem::exists(kTestData)) {
    MESSAGE("skipped: " << kTestData.string() << " is missing (tools/bootstrap installs libonnx-testdata)");
    return;
  }
  test::SimGpu gpu(test::SimGpu::kDefaultBudget, test::SimGpu::Kernels::layers);
  const int compared = conf::check_same_outcomes(kTestData, Device::gpu(0));
  MESSAGE(compared << " cases pass on the simulated GPU as on the CPU");
  CHECK(compared > 900);
  CHECK(gpu.engine().residency_violations() == 0);
  gc::poll();
  CHECK(gpu.bytes_in_use() == 0);
}

TEST_CASE("ONNX on a simulated GPU: a pass that fails in its host arithmetic leaves nothing behind") {
  // x [N, 6] reshaped to [N, 4]: the shape is computed on the host from x's
  // batch, and the reshape refuses it.
  GraphBuilder g;
  g.input("x", {-1, 6}).output("y", {-1, 4});
  g.ints("zero", {1}, {0}).ints("four", {1}, {4});
  g.node("Shape", {"x"}, {"shape"}, "shape");
  g.node("Gather", {"shape", "zero"}, {"n"}, "n");
  auto& concat = g.node("Concat", {"n", "four"}, {"target"}, "target");
  GraphBuilder::attr(concat, "axis", std::int64_t{0});
  g.node("Reshape", {"x", "target"}, {"y"}, "reshape");
  test::TempFolder dir("device_error");
  test::SimGpu gpu(test::SimGpu::kDefaultBudget, test::SimGpu::Kernels::layers);
  onnx::Imported net = onnx::load(g.write(dir / "bad.onnx"), "bad", Device::gpu(0));
  NDManager batch = net.model.manager().new_sub_manager("batch");
  NDArray x = batch.ones({3, 6});
  const std::size_t arrays = batch.array_count();
  gpu.reset_counts();  // the load copied the integer constants to the host
  CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{x}, false), doctest::Contains("cannot reshape"),
                       ShapeMismatch);
  CHECK(batch.sub_managers().empty());  // the pass's host values closed
  gc::poll();
  CHECK(batch.managed_arrays().size() == arrays);
  CHECK(gpu.to_host_calls() == 0);
}

// Named to run in the TSan phase beside the CPU's case (tools/test's onnx_threads).
TEST_CASE("GraphBlock: forward on four threads at once on a simulated GPU, its shapes on the host, gives each "
          "the same answer") {
  test::TempFolder dir("device_threads");
  const auto file = residual_graph().write(dir / "residual.onnx");
  test::SimGpu gpu(test::SimGpu::kDefaultBudget, test::SimGpu::Kernels::layers);
  onnx::Imported net = onnx::load(file, "residual", Device::gpu(0));
  NDManager inputs = NDManager::new_base_manager("inputs", Device::gpu(0));
  NDArray x = inputs.random_normal({3, 2, 8, 8});
  const std::vector<float> want = net.model.block().forward(NDList{x}, false).head().to_vector<float>();
  gpu.reset_counts();
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {  // every pass in x's manager, as on the CPU: each makes its host values there too
      for (int k = 0; k < 10; ++k) {
        NDArray y = net.model.block().forward(NDList{x}, false).head();
        if (y.to_vector<float>() != want) ++mismatches;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(mismatches == 0);
  CHECK(gpu.to_host_calls() == 40);  // each pass's answer, read by the test
  CHECK(gpu.engine().residency_violations() == 0);
}

TEST_CASE("ONNX on a simulated GPU: an If whose condition is shape arithmetic reads it on the host") {
  // y = If(x's batch == 1) then -x else x * x, x [N, 3]: exporters write such
  // conditions for a batch of one.
  auto branch = [](const char* op, std::vector<std::string> inputs, const std::string& out) {
    GraphBuilder b;
    b.output(out, {-1, 3});
    b.node(op, std::move(inputs), {out});
    return b;
  };
  GraphBuilder g;
  g.input("x", {-1, 3}).output("y", {-1, 3});
  g.ints("zero", {}, {0}).ints("one", {}, {1});
  g.node("Shape", {"x"}, {"shape"}, "shape");
  g.node("Gather", {"shape", "zero"}, {"n"}, "n");
  g.node("Equal", {"n", "one"}, {"single"}, "single");
  auto& n = g.node("If", {"single"}, {"y"}, "branch");
  GraphBuilder::attr_g(n, "then_branch", branch("Neg", {"x"}, "negated"));
  GraphBuilder::attr_g(n, "else_branch", branch("Mul", {"x", "x"}, "squared"));
  test::TempFolder dir("device_if");
  test::SimGpu gpu(test::SimGpu::kDefaultBudget, test::SimGpu::Kernels::layers);
  onnx::Imported net = onnx::load(g.write(dir / "if.onnx"), "if", Device::gpu(0));
  NDManager batch = net.model.manager().new_sub_manager("batch");
  for (const std::int64_t rows : {1, 2}) {
    CAPTURE(rows);
    NDArray x = batch.full(Shape{rows, 3}, 2.0);
    gpu.reset_counts();
    NDArray y = net.model.block().forward(NDList{x}, false).head();
    CHECK(gpu.to_host_calls() == 0);
    CHECK(gpu.from_host_calls() == 0);
    CHECK(y.to_vector<float>() == std::vector<float>(std::size_t(rows * 3), rows == 1 ? -2.0f : 4.0f));
  }
}

}  // namespace ndgc
