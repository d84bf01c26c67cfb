// Tests gpu/cudnn_conv.cpp: conv2d and both its gradients through cuDNN
// (Note [Convolutions through cuDNN]) against the CPU in every floating
// dtype, on the geometries of resnet18, mobilenet_v2 and the CNN; float32
// without TF32 unless allowed; the same bits on every run; a captured step
// replaying the eager one; a view cuDNN cannot take going through im2col.
// Runs only where gpu_main.cpp found a usable device.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <ndgc/cuda.hpp>
#include <ndgc/ndgc.hpp>

#include "cudnn_conv.hpp"
#include "gpu/check_same.hpp"

using namespace ndgc;

namespace {

std::vector<double> cudnn_wave(std::int64_t n, double f) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 1.5 * std::sin(double(i) * f + 0.3) * std::cos(double(i) * 0.07);
  return v;
}

struct CudnnCase {
  const char* name;
  Shape x, w;
  Pair stride, padding, dilation;
  std::int64_t groups;
};

// resnet18's stem and a 3x3 block, a 1x1 stride-2 shortcut, mobilenet_v2's
// depthwise 3x3, the CNN's convolutions, a dilated one.
const std::vector<CudnnCase> kCudnnCases = {
    {"resnet stem 7x7/2", {2, 3, 32, 32}, {16, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}, 1},
    {"3x3 block", {2, 16, 14, 14}, {16, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
    {"1x1/2 shortcut", {2, 16, 14, 14}, {32, 16, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1},
    {"depthwise 3x3", {2, 24, 12, 12}, {24, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 24},
    {"cnn conv 1", {4, 1, 28, 28}, {32, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
    {"dilated, grouped", {2, 8, 15, 13}, {8, 4, 3, 2}, {1, 2}, {2, 1}, {2, 1}, 2},
};

struct CudnnOutcome {
  NDArray y, dx, dw, db;
};

struct CudnnInputs {
  NDArray x, w, b;
  Shape y;
  NDArray r;  // the loss's weights: loss = Σ y · r
};

CudnnInputs cudnn_inputs(NDManager& m, const CudnnCase& k, DataType dtype) {
  CudnnInputs in;
  in.x = m.create(cudnn_wave(k.x.size(), 0.37), k.x).to_type(dtype).set_requires_gradient(true);
  in.w = m.create(cudnn_wave(k.w.size(), 0.53), k.w).to_type(dtype).set_requires_gradient(true);
  in.b = m.create(cudnn_wave(k.w[0], 0.71), Shape{k.w[0]}).to_type(dtype).set_requires_gradient(true);
  in.y = Shape{k.x[0], k.w[0], 0, 0};
  for (int a = 0; a < 2; ++a) {
    const std::size_t i = std::size_t(a);
    in.y[2 + a] = (k.x[2 + a] + 2 * k.padding[i] - k.dilation[i] * (k.w[2 + a] - 1) - 1) / k.stride[i] + 1;
  }
  in.r = m.create(cudnn_wave(in.y.size(), 0.29), in.y).to_type(dtype);
  return in;
}

// conv2d with a bias and the gradients of Σ y · r (no host transfer: a
// device graph may capture it).
CudnnOutcome cudnn_step(const CudnnInputs& in, const CudnnCase& k) {
  CudnnOutcome o;
  {
    GradientCollector gc;
    o.y = conv2d(in.x, in.w, in.b, k.stride, k.padding, k.dilation, k.groups);
    gc.backward(o.y.mul(in.r).sum());
  }
  o.dx = in.x.gradient(), o.dw = in.w.gradient(), o.db = in.b.gradient();
  return o;
}

CudnnOutcome cudnn_run(NDManager& m, const CudnnCase& k, DataType dtype) {
  return cudnn_step(cudnn_inputs(m, k, dtype), k);
}

// The tolerance relative to (1 + |cpu|) of a GPU result: float32 and float64
// sums in another order; 16 bits: one rounding each side of float32 sums.
double cudnn_tolerance(DataType t) {
  switch (t) {
    case DataType::float64: return 1e-10;
    case DataType::float32: return 2e-4;
    case DataType::float16: return 16 * 0x1p-11;
    default: return 16 * 0x1p-8;
  }
}

}  // namespace

TEST_CASE("cuDNN loads, and serves conv2d and both gradients in every floating dtype, matching the CPU") {
  MESSAGE("cuDNN " << cuda::cudnn_version() << " loaded");
  REQUIRE_MESSAGE(cuda::cudnn_unavailable().empty(), cuda::cudnn_unavailable());
  NDManager cpu = NDManager::new_base_manager("cudnn-cpu");
  NDManager gpu = NDManager::new_base_manager("cudnn-gpu", Device::gpu(0));
  for (DataType t : {DataType::float32, DataType::float64, DataType::bfloat16, DataType::float16}) {
    for (const CudnnCase& k : kCudnnCases) {
      INFO(to_string(t) << ", " << k.name);
      const std::uint64_t before = cuda::cudnn_convolutions();
      const CudnnOutcome g = cudnn_run(gpu, k, t), c = cudnn_run(cpu, k, t);
      CHECK(cuda::cudnn_convolutions() == before + 3);  // forward, x's gradient, the weight's
      const double tol = cudnn_tolerance(t);
      gpu_test::check_same(c.y, g.y, tol, "output");
      gpu_test::check_same(c.dx, g.dx, tol, "gradient of x");
      gpu_test::check_same(c.dw, g.dw, tol, "gradient of the weight");
      gpu_test::check_same(c.db, g.db, tol, "gradient of the bias");
    }
  }
  CHECK(cuda::cudnn_unavailable().empty());
}

TEST_CASE("float32 convolutions through cuDNN keep float32's precision: no TF32 unless allowed") {
  // 2,304 taps a sum: TF32's 10-bit products would be ~1e-3 off, float32's ~1e-6.
  NDManager cpu = NDManager::new_base_manager("cudnn-cpu");
  NDManager gpu = NDManager::new_base_manager("cudnn-gpu", Device::gpu(0));
  const CudnnCase k{"wide 3x3", {2, 256, 8, 8}, {32, 256, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1};
  REQUIRE_FALSE(cuda::allow_tf32());
  const CudnnOutcome g = cudnn_run(gpu, k, DataType::float32), c = cudnn_run(cpu, k, DataType::float32);
  gpu_test::check_same(c.y, g.y, 5e-5, "output");
  gpu_test::check_same(c.dx, g.dx, 5e-5, "gradient of x");
  gpu_test::check_same(c.dw, g.dw, 5e-5, "gradient of the weight");
}

TEST_CASE("conv2d through cuDNN gives the same bits on every run, forward and backward") {
  NDManager gpu = NDManager::new_base_manager("cudnn-gpu", Device::gpu(0));
  for (const CudnnCase& k : kCudnnCases) {
    INFO(k.name);
    const CudnnOutcome a = cudnn_run(gpu, k, DataType::float32), b = cudnn_run(gpu, k, DataType::float32);
    CHECK(a.y.to_vector<float>() == b.y.to_vector<float>());
    CHECK(a.dx.to_vector<float>() == b.dx.to_vector<float>());
    CHECK(a.dw.to_vector<float>() == b.dw.to_vector<float>());
  }
}

TEST_CASE("a captured conv2d step through cuDNN replays the eager step's results") {
  NDManager gpu = NDManager::new_base_manager("cudnn-gpu", Device::gpu(0));
  const CudnnCase& k = kCudnnCases[1];
  const CudnnOutcome eager = cudnn_run(gpu, k, DataType::float32);
  const CudnnInputs in = cudnn_inputs(gpu, k, DataType::float32);
  CudnnOutcome graphed;
  DeviceGraph graph = DeviceGraph::capture(Device::gpu(0), [&] { graphed = cudnn_step(in, k); });
  graph.replay();
  CHECK(graphed.y.to_vector<float>() == eager.y.to_vector<float>());
  CHECK(graphed.dx.to_vector<float>() == eager.dx.to_vector<float>());
  CHECK(graphed.dw.to_vector<float>() == eager.dw.to_vector<float>());
}

TEST_CASE("a view cuDNN cannot take (not 16-byte aligned) goes through im2col and still matches the CPU") {
  NDManager cpu = NDManager::new_base_manager("cudnn-cpu");
  NDManager gpu = NDManager::new_base_manager("cudnn-gpu", Device::gpu(0));
  auto run = [](NDManager& m) {
    const NDArray x = m.create(cudnn_wave(2 * 3 * 9 * 10, 0.4), Shape{2, 3, 9, 10});
    const NDArray w = m.create(cudnn_wave(4 * 3 * 3 * 3, 0.5), Shape{4, 3, 3, 3});
    return conv2d(x.get(":, :, :, 1:"), w, NDArray{}, {1, 1}, {1, 1});  // starts one float in
  };
  const std::uint64_t before = cuda::cudnn_convolutions();
  const NDArray g = run(gpu);
  CHECK(cuda::cudnn_convolutions() == before);
  gpu_test::check_same(run(cpu), g, cudnn_tolerance(DataType::float32), "conv2d of an unaligned view");
}
