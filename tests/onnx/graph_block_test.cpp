// GraphBlock: constants folded at load, intermediates released at their last
// use, and forward on several threads at once.
#include <doctest/doctest.h>

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
