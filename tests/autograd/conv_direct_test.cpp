// conv2d through an engine's own convolutions (Engine::conv2d_direct and
// conv2d_backward_*_direct, the CUDA engine's cuDNN path) on the simulated
// GPU, whose direct convolutions are computed from the definition in
// float64 (tests/sim_gpu.hpp): the output and both gradients equal the
// im2col path's; the gradient rule asks only for what it needs; an engine
// that declines leaves everything to im2col, with the same bits; 16-bit
// views reach only an engine that takes them (Engine::conv2d_16); nothing is
// left on the device. The cuDNN side itself runs in tests/gpu/cudnn_conv_test.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <ndgc/autograd.hpp>
#include <ndgc/ndgc.hpp>

#include "sim_gpu.hpp"

namespace ndgc {
namespace {

struct DirectCase {
  Pair stride, padding, dilation;
  std::int64_t groups;
  bool bias;
  bool strided_x;  // x seen every second column
};

struct DirectPass {
  std::vector<double> out, dx, dw, db;
};

std::vector<double> direct_wave(std::int64_t n, double f) {
  std::vector<double> v(std::size_t(n), 0.0);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i) * f + 0.2) * 1.5;
  return v;
}

std::vector<double> direct_read(const NDArray& a) { return a.to_type(DataType::float64).to_vector<double>(); }

// conv2d on gpu(0) in `dtype`, and the gradients of Σ out · r for the inputs
// that `train` marks (x, weight, bias).
DirectPass direct_convolve(DataType dtype, const DirectCase& g, std::array<bool, 3> train = {true, true, true}) {
  NDManager m = NDManager::new_base_manager("conv-direct", Device::gpu(0));
  NDArray x = m.create(direct_wave(2 * 4 * 7 * 12, 0.37), Shape{2, 4, 7, 12}).to_type(dtype);
  NDArray w = m.create(direct_wave(8 * (4 / g.groups) * 3 * 2, 0.53), Shape{8, 4 / g.groups, 3, 2}).to_type(dtype);
  NDArray b = m.create(direct_wave(8, 0.71), Shape{8}).to_type(dtype);
  x.set_requires_gradient(train[0]);
  w.set_requires_gradient(train[1]);
  b.set_requires_gradient(train[2]);
  DirectPass p;
  {
    GradientCollector gc;
    const NDArray xs = g.strided_x ? x.get(":, :, :, ::2") : x;
    NDArray out = conv2d(xs, w, g.bias ? b : NDArray{}, g.stride, g.padding, g.dilation, g.groups);
    const NDArray r = m.create(direct_wave(out.shape().size(), 0.29), out.shape()).to_type(dtype);
    gc.backward(out.mul(r).sum());
    p.out = direct_read(out);
  }
  if (train[0]) p.dx = direct_read(x.gradient());
  if (train[1]) p.dw = direct_read(w.gradient());
  if (train[2] && g.bias) p.db = direct_read(b.gradient());
  return p;
}

void direct_close(const std::vector<double>& a, const std::vector<double>& b, double tolerance, const char* what) {
  INFO(what);
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / (1 + std::abs(b[i])));
  CHECK(worst <= tolerance);
}

const std::vector<DirectCase> kDirectCases = {{{1, 1}, {0, 0}, {1, 1}, 1, true, false},
                                           {{2, 1}, {1, 2}, {1, 2}, 2, true, true},
                                           {{1, 2}, {2, 1}, {2, 1}, 4, false, false},
                                           {{3, 2}, {1, 1}, {1, 1}, 1, true, true}};

}  // namespace

TEST_CASE("conv2d and both gradients through an engine's own convolutions equal the im2col path's") {
  test::SimGpu gpu(test::SimGpu::kDefaultBudget, test::SimGpu::Kernels::layers);
  for (DataType t : {DataType::float32, DataType::float64}) {
    const double tolerance = t == DataType::float32 ? 1e-5 : 1e-12;
    for (const DirectCase& g : kDirectCases) {
      INFO(to_string(t) << " stride (" << g.stride[0] << ", " << g.stride[1] << "), groups " << g.groups);
      gpu.engine().set_direct_conv({});
      const DirectPass im2col = direct_convolve(t, g);
      const auto before = gpu.engine().direct_forward_calls();
      gpu.engine().set_direct_conv({.on = true});
      const DirectPass direct = direct_convolve(t, g);
      CHECK(gpu.engine().direct_forward_calls() == before + 1);
      direct_close(direct.out, im2col.out, tolerance, "output");
      direct_close(direct.dx, im2col.dx, tolerance, "gradient of x");
      direct_close(direct.dw, im2col.dw, tolerance, "gradient of the weight");
      direct_close(direct.db, im2col.db, tolerance, "gradient of the bias");
    }
  }
}

TEST_CASE("the conv2d rule asks an engine's own convolutions for the gradients it needs, and only those") {
  test::SimGpu gpu(test::SimGpu::kDefaultBudget, test::SimGpu::Kernels::layers);
  gpu.engine().set_direct_conv({.on = true});
  const DirectCase g = kDirectCases[1];
  auto calls = [&] {
    return std::array<std::uint64_t, 3>{gpu.engine().direct_forward_calls(), gpu.engine().direct_data_calls(),
                                        gpu.engine().direct_weight_calls()};
  };
  using Calls = std::array<std::uint64_t, 3>;
  Calls before = calls();
  direct_convolve(DataType::float32, g);
  CHECK(calls() == Calls{before[0] + 1, before[1] + 1, before[2] + 1});
  before = calls();
  direct_convolve(DataType::float32, g, {false, true, true});  // the weight's gradient only
  CHECK(calls() == Calls{before[0] + 1, before[1], before[2] + 1});
  before = calls();
  direct_convolve(DataType::float32, g, {true, false, false});  // x's only
  CHECK(calls() == Calls{before[0] + 1, before[1] + 1, before[2]});
}

TEST_CASE("an engine whose own convolutions decline leaves conv2d to im2col: the same bits, nothing left behind") {
  test::SimGpu gpu(test::SimGpu::kDefaultBudget, test::SimGpu::Kernels::layers);
  const auto bytes = gpu.bytes_in_use();
  for (const DirectCase& g : kDirectCases) {
    gpu.engine().set_direct_conv({});
    const DirectPass im2col = direct_convolve(DataType::float32, g);
    gpu.engine().set_direct_conv({.on = true, .accepts = false});
    const auto before = gpu.engine().direct_forward_calls() + gpu.engine().direct_data_calls() +
                        gpu.engine().direct_weight_calls();
    const DirectPass declined = direct_convolve(DataType::float32, g);
    CHECK(gpu.engine().direct_forward_calls() + gpu.engine().direct_data_calls() +
              gpu.engine().direct_weight_calls() ==
          before);
    CHECK(declined.out == im2col.out);
    CHECK(declined.dx == im2col.dx);
    CHECK(declined.dw == im2col.dw);
    CHECK(declined.db == im2col.db);
  }
  gc::poll();
  CHECK(gpu.bytes_in_use() == bytes);
}

TEST_CASE("16-bit convolutions reach an engine's own convolutions only when it takes 16-bit views") {
  test::SimGpu gpu(test::SimGpu::kDefaultBudget, test::SimGpu::Kernels::layers);
  const DirectCase g = kDirectCases[1];
  for (DataType t : {DataType::bfloat16, DataType::float16}) {
    INFO(to_string(t));
    const double unit = t == DataType::float16 ? 0x1p-11 : 0x1p-8;
    gpu.engine().set_direct_conv({});
    const DirectPass im2col = direct_convolve(t, g);
    auto total = [&] {
      return gpu.engine().direct_forward_calls() + gpu.engine().direct_data_calls() +
             gpu.engine().direct_weight_calls();
    };
    gpu.engine().set_direct_conv({.on = true, .half = false});
    std::uint64_t before = total();
    const DirectPass widened = direct_convolve(t, g);
    CHECK(total() == before);  // 16 bits without conv2d_16: im2col and the 16-bit products
    CHECK(widened.out == im2col.out);
    gpu.engine().set_direct_conv({.on = true, .half = true});
    before = total();
    const DirectPass direct = direct_convolve(t, g);
    CHECK(total() == before + 3);
    // One rounding of a float64 sum against 16-bit partial products and sums: some units apart.
    direct_close(direct.out, im2col.out, 16 * unit, "output");
    direct_close(direct.dx, im2col.dx, 16 * unit, "gradient of x");
    direct_close(direct.dw, im2col.dw, 16 * unit, "gradient of the weight");
  }
}

}  // namespace ndgc
