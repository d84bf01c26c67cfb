// Tests gpu/cuda_engine_layers.cpp and the layer kernels (conv_kernels.cu,
// layer_kernels.cu, norm_kernels.cu, lstm_kernels.cu): every layer op on the
// GPU against the CPU engine on the same inputs, forward and gradients
// through a GradientCollector, with stride, padding, dilation, groups and
// view inputs; dropout's mask and embedding's repeated-index gradient bit for
// bit, and its twin for checked indices (ops::embedding_in_range); the same
// bits on every run; errors named as on the CPU; device bytes returned.
// Runs only where gpu_main.cpp found a usable device.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ndgc/ndgc.hpp>

#include "gpu/check_same.hpp"

#include "ops/embedding.hpp"
#include "ops/engine.hpp"

using namespace ndgc;

namespace {

const std::vector<DataType> kFloats = {DataType::float32, DataType::float64};

// Relative tolerance of a GPU result against the CPU's: sums in another order
// (cuBLAS, block trees) and device maths (erf, exp, tanh) differ in the last bits.
double tol(DataType t) { return t == DataType::float32 ? 2e-4 : 1e-10; }

// Deterministic values in [-2, 2] (`ties`: whole and half numbers, so that windows hold equal maxima).
std::vector<double> values(std::int64_t n, double f, bool ties = false) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double x = 2 * std::sin(double(i) * f + 0.3) * std::cos(double(i) * 0.11);
    v[i] = ties ? std::round(2 * x) / 2 : x;
  }
  return v;
}

// One array made with the same values on the CPU and on the GPU.
struct Twin {
  NDArray cpu, gpu;
  const NDArray& on(bool gpu_side) const { return gpu_side ? gpu : cpu; }
};

struct Devices {
  NDManager cpu = NDManager::new_base_manager("cpu-side");
  NDManager gpu = NDManager::new_base_manager("gpu-side", Device::gpu(0));
  double f = 0.37;  // each make() draws another wave

  Twin make(const Shape& shape, DataType dtype, bool ties = false) {
    const std::vector<double> v = values(shape.size(), f += 0.61, ties);
    return {cpu.create(v, shape).to_type(dtype), gpu.create(v, shape).to_type(dtype)};
  }
  Twin indices(const std::vector<double>& v, const Shape& shape, DataType dtype) {
    return {cpu.create(v, shape).to_type(dtype), gpu.create(v, shape).to_type(dtype)};
  }
};

using gpu_test::check_same;

// An op of some inputs, run on one side (the inputs are that side's arrays).
using Op = std::function<NDArray(const std::vector<NDArray>&)>;

struct Outcome {
  NDArray out;
  std::vector<NDArray> grads;  // of the inputs that `trained` marks
};

// Runs `op` with gradients recorded, the loss being Σ out · r for fixed
// values r (so that each output element's gradient differs), and collects
// the gradients of inputs[i] where trained[i].
Outcome run(bool gpu_side, const std::vector<Twin>& inputs, const std::vector<bool>& trained, const Op& op) {
  std::vector<NDArray> xs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    NDArray x = inputs[i].on(gpu_side);
    if (trained[i]) x.set_requires_gradient(true);
    xs.push_back(x);
  }
  Outcome o;
  {
    GradientCollector gc;
    o.out = op(xs);
    const NDArray r = o.out.manager().create(values(o.out.shape().size(), 0.29), o.out.shape()).to_type(o.out.dtype());
    gc.backward(o.out.mul(r).sum());
  }
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (trained[i]) o.grads.push_back(xs[i].gradient());
  return o;
}

// The op's output and gradients on both devices, compared.
void compare(const std::vector<Twin>& inputs, const std::vector<bool>& trained, const Op& op, double tolerance,
             const std::string& what) {
  const Outcome c = run(false, inputs, trained, op), g = run(true, inputs, trained, op);
  check_same(c.out, g.out, tolerance, what + ": output");
  for (std::size_t i = 0; i < c.grads.size(); ++i)
    check_same(c.grads[i], g.grads[i], tolerance, what + ": gradient " + std::to_string(i));
}

// batch_norm of x with parameters and running statistics of dtype `params`,
// training and not, against the CPU: output and gradients within
// `tolerance`, the running statistics within `stats_tolerance`.
void check_batch_norm(Devices& d, const Twin& x, DataType params, double tolerance, double stats_tolerance) {
  const Shape channels{x.cpu.shape()[1]};
  Twin gamma = d.make(channels, params), beta = d.make(channels, params);
  Twin rm = d.make(channels, params), rv = d.make(channels, params);
  rv.cpu = rv.cpu.abs().add(0.5), rv.gpu = rv.gpu.abs().add(0.5);
  for (bool training : {true, false}) {
    INFO("training " << training);
    const Op op = [&](const std::vector<NDArray>& in) {
      const bool gpu_side = in[0].device() == Device::gpu(0);
      return batch_norm(in[0], in[1], in[2], rm.on(gpu_side), rv.on(gpu_side), training, 0.2);
    };
    compare({x, gamma, beta}, {true, true, true}, op, tolerance, "batch_norm");
    check_same(rm.cpu, rm.gpu, stats_tolerance, "running mean");
    check_same(rv.cpu, rv.gpu, stats_tolerance, "running variance");
  }
}

struct ConvCase {
  Pair stride, padding, dilation;
  std::int64_t groups;
  bool bias;
};

}  // namespace

TEST_CASE("the CUDA engine has the layer kernels") { CHECK(ops::engine(Device::gpu(0)).has_layer_kernels()); }

TEST_CASE("conv2d matches the CPU: stride, padding, dilation, groups, bias, a strided view of x") {
  const std::vector<ConvCase> cases = {{{1, 1}, {0, 0}, {1, 1}, 1, true},
                                       {{2, 1}, {1, 2}, {1, 2}, 2, true},
                                       {{1, 2}, {2, 1}, {2, 1}, 2, false},
                                       {{3, 3}, {1, 1}, {1, 1}, 4, true}};
  for (DataType t : kFloats) {
    Devices d;
    for (const ConvCase& k : cases) {
      INFO(to_string(t) << " stride (" << k.stride[0] << ", " << k.stride[1] << ") groups " << k.groups);
      Twin x = d.make({2, 4, 9, 14}, t), w = d.make({8, 4 / k.groups, 3, 2}, t), b = d.make({8}, t);
      const Op op = [&](const std::vector<NDArray>& in) {
        const NDArray xs = in[0].get(":, :, :, ::2");  // [2, 4, 9, 7], columns two apart
        return conv2d(xs, in[1], k.bias ? in[2] : NDArray{}, k.stride, k.padding, k.dilation, k.groups);
      };
      compare({x, w, b}, {true, true, k.bias}, op, tol(t), "conv2d");
    }
  }
}

TEST_CASE("max_pool2d and avg_pool2d match the CPU, ties and padding included, on a transposed view") {
  struct PoolCase {
    Pair kernel, stride, padding;
  };
  const std::vector<PoolCase> cases = {
      {{2, 2}, {2, 2}, {0, 0}}, {{3, 3}, {1, 2}, {1, 1}}, {{3, 2}, {2, 1}, {1, 0}}, {{2, 3}, {1, 1}, {1, 1}}};
  for (DataType t : kFloats) {
    Devices d;
    Twin x = d.make({2, 3, 8, 7}, t, /*ties=*/true);
    for (const PoolCase& k : cases) {
      INFO(to_string(t) << " kernel (" << k.kernel[0] << ", " << k.kernel[1] << ")");
      // The max pool's gradient goes to the first maximum: the same position on both, so the same values.
      compare({x}, {true}, [&](const auto& in) { return max_pool2d(in[0], k.kernel, k.stride, k.padding); }, 0,
              "max_pool2d");
      compare({x}, {true},
              [&](const auto& in) { return avg_pool2d(in[0].transpose({0, 1, 3, 2}), k.kernel, k.stride, k.padding); },
              tol(t), "avg_pool2d of a transposed view");
    }
    compare({x}, {true}, [](const auto& in) { return max_pool2d(in[0], {2, 2}, {2, 1}, {1, 1}, {2, 3}); }, 0,
            "dilated max_pool2d");
  }
}

TEST_CASE("16-bit conv, pools, GELU, dropout and batch_norm run on the GPU's own 16-bit kernels and match the CPU's") {
  // The CPU widens each kernel to float32 and rounds once; the GPU's kernels
  // take the 16-bit views (Engine::kernels_16) and round once too, so the two
  // differ only where float32 sums in another order round the other way.
  for (DataType t : {DataType::float16, DataType::bfloat16}) {
    const double unit = t == DataType::float16 ? 0x1p-11 : 0x1p-8;
    Devices d;
    Twin x = d.make({2, 3, 9, 8}, t, /*ties=*/true), w = d.make({4, 3, 3, 3}, t), b = d.make({4}, t);
    INFO(to_string(t));
    compare({x, w, b}, {true, true, true},
            [](const auto& in) { return conv2d(in[0], in[1], in[2], {1, 1}, {1, 1}, {1, 1}, 1).relu(); }, 8 * unit,
            "conv2d + relu");
    compare({x}, {true}, [](const auto& in) { return max_pool2d(in[0], {2, 2}, {2, 2}, {0, 0}); }, 0, "max_pool2d");
    compare({x}, {true}, [](const auto& in) { return avg_pool2d(in[0], {3, 3}, {2, 2}, {1, 1}); }, 2 * unit,
            "avg_pool2d");
    compare({x}, {true}, [](const auto& in) { return in[0].gelu(); }, 2 * unit, "gelu");
    compare({x}, {true},
            [](const auto& in) {
              set_random_seed(5);
              return dropout(in[0], 0.3, true);
            },
            0, "dropout");
    // A 16-bit x with float32 parameters and statistics (Engine::batch_norm_16).
    check_batch_norm(d, x, DataType::float32, 4 * unit, 1e-5);
  }
}

TEST_CASE("batch_norm matches the CPU in training and evaluation, running statistics included") {
  // The last two shapes cut each channel into three parts (Note [Channels in
  // parts]), with images longer and shorter than a block.
  for (DataType t : kFloats) {
    for (const Shape& shape : {Shape{4, 3, 5, 2}, Shape{6, 3}, Shape{64, 3, 24, 24}, Shape{700, 2, 7, 7}}) {
      INFO(to_string(t) << " x " << shape.to_string());
      Devices d;
      check_batch_norm(d, d.make(shape, t), t, tol(t), tol(t));
    }
  }
}

TEST_CASE("layer_norm matches the CPU over one and two trailing axes, on a view") {
  for (DataType t : kFloats) {
    Devices d;
    Twin x = d.make({3, 10, 4}, t), g1 = d.make({3}, t), b1 = d.make({3}, t), g2 = d.make({10, 3}, t),
         b2 = d.make({10, 3}, t);
    const Op last = [](const std::vector<NDArray>& in) { return layer_norm(in[0].get(":, :, 1:"), in[1], in[2]); };
    compare({x, g1, b1}, {true, true, true}, last, tol(t), "layer_norm over the last axis of a slice");
    const Op two = [](const std::vector<NDArray>& in) {
      return layer_norm(in[0].transpose({2, 1, 0}).get("1:"), in[1], in[2], 1e-3);
    };
    compare({x, g2, b2}, {true, true, true}, two, tol(t), "layer_norm over two axes of a transposed view");
  }
}

TEST_CASE("gelu matches the CPU, forward and backward, on a view") {
  for (DataType t : kFloats) {
    Devices d;
    Twin x = d.make({7, 9}, t);
    compare({x}, {true}, [](const auto& in) { return in[0].transpose().gelu(); }, tol(t), "gelu");
  }
}

TEST_CASE("dropout draws the CPU's mask bit for bit, forward and backward, on a view") {
  for (DataType t : kFloats) {
    Devices d;
    Twin x = d.make({33, 64}, t);
    for (double p : {0.1, 0.5, 0.9}) {
      INFO("p " << p);
      const Op op = [p](const std::vector<NDArray>& in) {
        set_random_seed(77);
        return dropout(in[0].get("::2").transpose(), p, true);
      };
      compare({x}, {true}, op, 0, "dropout");  // a mask and one multiplication: the same bits
    }
  }
}

TEST_CASE("embedding matches the CPU; a repeated index's gradient is the CPU's sum, bit for bit") {
  const std::vector<double> idx = {3, 0, 3, 5, 3, 1, 0, 3, 2, 5, 5, 4};
  for (DataType t : kFloats)
    for (DataType it : {DataType::int32, DataType::int64, DataType::uint8}) {
      INFO(to_string(t) << " indices " << to_string(it));
      Devices d;
      Twin w = d.make({7, 5}, t), i = d.indices(idx, {3, 4}, it);
      // Same additions in the same order (Note [Embedding gradient by sorting] in gpu/layer_kernels.cu).
      compare({i, w}, {false, true}, [](const auto& in) { return embedding(in[0], in[1]); }, 0, "embedding");
      compare({i, w}, {false, true}, [](const auto& in) { return embedding(in[0].transpose(), in[1].get(":, ::2")); },
              0, "embedding of views");
      // The twin for checked indices, which reads no check back: the same bits.
      compare({i, w}, {false, true}, [](const auto& in) { return ops::embedding_in_range(in[0], in[1]); }, 0,
              "embedding_in_range");
    }
}

TEST_CASE("embedding_in_range given a bad index after all writes nothing out of bounds and throws nothing") {
  Devices d;
  Twin w = d.make({4, 3}, DataType::float32);
  Twin bad = d.indices({1, 9, -1, 2}, {4}, DataType::int64);
  NDArray rows;
  CHECK_NOTHROW(rows = ops::embedding_in_range(bad.gpu, w.gpu));
  const std::vector<float> got = rows.to_vector<float>(), want = w.cpu.to_vector<float>();
  for (std::size_t k = 0; k < 3; ++k) {  // the good positions 0 and 3 hold rows 1 and 2
    CHECK(got[k] == want[3 + k]);
    CHECK(got[9 + k] == want[6 + k]);
  }
}

TEST_CASE("embedding on the GPU names a bad index as the CPU does, and leaves no array behind") {
  Devices d;
  Twin w = d.make({4, 3}, DataType::float32);
  Twin bad = d.indices({1, 2, 0, 9, 1, -1}, {2, 3}, DataType::int64);
  const std::size_t before = d.gpu.array_count();
  CHECK_THROWS_WITH_AS(embedding(bad.gpu, w.gpu), doctest::Contains("index 9 at position (1, 0)"), InvalidArgument);
  CHECK(d.gpu.array_count() == before);
  CHECK_THROWS_WITH_AS(embedding(bad.cpu, w.cpu), doctest::Contains("index 9 at position (1, 0)"), InvalidArgument);
}

TEST_CASE("lstm_cell and a 2-layer lstm match the CPU, gates as strided slices") {
  for (DataType t : kFloats) {
    Devices d;
    const std::int64_t b = 3, h = 5, steps = 4, f = 6;
    Twin proj = d.make({b, steps, 4 * h}, t), hidden = d.make({b, 4 * h}, t), c = d.make({b, h}, t);
    const Op cell = [](const std::vector<NDArray>& in) { return lstm_cell(in[0].get(":, 2"), in[1], in[2]); };
    compare({proj, hidden, c}, {true, true, true}, cell, tol(t), "lstm_cell");
    Twin x = d.make({b, steps, f}, t), wih0 = d.make({f, 4 * h}, t), whh0 = d.make({h, 4 * h}, t),
         b0 = d.make({4 * h}, t), wih1 = d.make({h, 4 * h}, t), whh1 = d.make({h, 4 * h}, t), b1 = d.make({4 * h}, t);
    const Op net = [=](const std::vector<NDArray>& in) {
      NDList out = lstm(in[0], NDList{in[1], in[2], in[3], in[4], in[5], in[6]});
      return out[0].add(out[2].get("1").reshape({b, 1, h}));  // y and the last layer's c
    };
    compare({x, wih0, whh0, b0, wih1, whh1, b1}, std::vector<bool>(7, true), net, 4 * tol(t), "lstm, 2 layers");
  }
}

TEST_CASE("a conv, batch-norm, pool and embedding step gives the same bits on every GPU run") {
  Devices d;
  Twin x = d.make({4, 6, 10, 10}, DataType::float32), w = d.make({8, 3, 3, 3}, DataType::float32);
  Twin gamma = d.make({8}, DataType::float32), beta = d.make({8}, DataType::float32);
  Twin table = d.make({20, 16}, DataType::float32);
  std::vector<double> iv(300);
  for (std::size_t i = 0; i < iv.size(); ++i) iv[i] = double(i * 7 % 20);
  Twin idx = d.indices(iv, {300}, DataType::int64);
  NDArray rm = d.gpu.zeros({8}), rv = d.gpu.ones({8});
  const Op op = [&](const std::vector<NDArray>& in) {
    NDArray y = conv2d(in[0], in[1], NDArray{}, {1, 1}, {1, 1}, {1, 1}, 2);
    y = batch_norm(y, in[2], in[3], rm, rv, true);
    y = max_pool2d(y.gelu(), {3, 3}, {1, 1}, {1, 1}).add(avg_pool2d(y, {2, 2}, {1, 1}, {1, 1}).get(":, :, 1:, 1:"));
    return y.sum().add(embedding(in[5], in[4]).square().sum());
  };
  const std::vector<Twin> in = {x, w, gamma, beta, table, idx};
  const std::vector<bool> trained = {true, true, true, true, true, false};
  const Outcome first = run(true, in, trained, op), second = run(true, in, trained, op);
  CHECK(first.out.to_vector<float>() == second.out.to_vector<float>());
  for (std::size_t i = 0; i < first.grads.size(); ++i) {
    INFO("gradient " << i);
    CHECK(first.grads[i].to_vector<float>() == second.grads[i].to_vector<float>());
  }
}

TEST_CASE("the layer ops' scratch is accounted and returned: device bytes back where they were") {
  const auto before = memory::stats(Device::gpu(0)).current_bytes;
  {
    Devices d;
    Twin x = d.make({2, 4, 8, 8}, DataType::float32), w = d.make({4, 4, 3, 3}, DataType::float32);
    Twin table = d.make({10, 4}, DataType::float32), idx = d.indices({1, 9, 1, 0}, {4}, DataType::int32);
    compare({x, w}, {true, true}, [](const auto& in) { return conv2d(in[0], in[1], NDArray{}, {1, 1}, {1, 1}); },
            tol(DataType::float32), "conv2d");
    compare({idx, table}, {false, true}, [](const auto& in) { return embedding(in[0], in[1]); }, 0, "embedding");
  }
  CHECK(memory::stats(Device::gpu(0)).current_bytes == before);
}
