// src/ops/layer_support.cpp: a device whose engine has no layer kernels (the
// simulated GPU here, the CUDA engine this session) refuses every layer op
// with the op and the device named, before it allocates anything; the
// engine's default kernels throw InvalidArgument naming the kernel.
#include <doctest/doctest.h>

#include <ndgc/ndgc.hpp>

#include "ops/engine.hpp"
#include "sim_gpu.hpp"

using namespace ndgc;

TEST_CASE("layer ops on an engine without layer kernels: InvalidArgument naming the op and the device") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("layers-on-gpu", Device::gpu(0));
  NDArray x = m.ones({1, 2, 4, 4}), w = m.ones({3, 2, 3, 3}), v = m.ones({2}), idx = m.zeros({2}, DataType::int64);
  const std::size_t before = m.array_count();
  CHECK_THROWS_WITH_AS(conv2d(x, w, NDArray{}), doctest::Contains("conv2d: not available on gpu(0) yet"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(max_pool2d(x, {2, 2}, {2, 2}), doctest::Contains("max_pool2d: not available on gpu(0)"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(avg_pool2d(x, {2, 2}, {2, 2}), doctest::Contains("avg_pool2d: not available"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(x.gelu(), doctest::Contains("gelu: not available"), InvalidArgument);
  CHECK_THROWS_WITH_AS(dropout(x, 0.5, true), doctest::Contains("dropout: not available"), InvalidArgument);
  CHECK(dropout(x, 0.5, false).uid() == x.uid());  // no kernel needed
  CHECK_THROWS_WITH_AS(embedding(idx, m.ones({4, 3})), doctest::Contains("embedding: not available"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(layer_norm(x, m.ones({4}), m.ones({4})), doctest::Contains("layer_norm: not available"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(batch_norm(x, v, v, m.zeros({2}), m.ones({2}), true),
                       doctest::Contains("batch_norm: not available"), InvalidArgument);
  CHECK(m.array_count() == before + 5);  // the arrays made for the calls, no output
  ops::TensorView none;
  CHECK_THROWS_WITH_AS(gpu.engine().im2col(none, ops::Window2d{}, none), doctest::Contains("im2col: not available"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(gpu.engine().batch_norm_stats(none, none, none), doctest::Contains("batch_norm_stats"),
                       InvalidArgument);
}

TEST_CASE("lstm_cell and lstm on an engine without layer kernels: InvalidArgument naming the op and the device") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("lstm-on-gpu", Device::gpu(0));
  NDArray gates = m.ones({2, 8}), c = m.zeros({2, 2}), x = m.ones({2, 3, 4});
  NDList w{m.ones({4, 8}), m.ones({2, 8}), m.zeros({8})};
  const std::size_t before = m.array_count();
  CHECK_THROWS_WITH_AS(lstm_cell(gates, gates, c), doctest::Contains("lstm_cell: not available on gpu(0) yet"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(lstm(x, w), doctest::Contains("lstm: not available on gpu(0) yet"), InvalidArgument);
  CHECK(m.array_count() == before);
  ops::TensorView none;
  CHECK_THROWS_WITH_AS(gpu.engine().lstm_cell(none, none, none, none), doctest::Contains("lstm_cell: not available"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(gpu.engine().lstm_cell_backward(none, none, none, none, none, none, none),
                       doctest::Contains("lstm_cell_backward: not available"), InvalidArgument);
}
