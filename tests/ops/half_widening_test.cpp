// float16 and bfloat16 through every op (ops/half_widening.cpp): each kernel
// computes in float32 and rounds once, so an op that is one kernel call gives
// exactly the float32 result rounded, and a composed op (conv, pooling, norms,
// the LSTM) stays within a few roundings of float32. Gradients likewise.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <ndgc/autograd.hpp>
#include <ndgc/layers.hpp>
#include <ndgc/lstm.hpp>
#include <ndgc/ndgc.hpp>
#include <ndgc/parallel.hpp>

#include "support/cpu_features.hpp"

namespace ndgc {

namespace {

using HalfOp = std::function<NDArray(const NDArray&)>;
constexpr DataType kHalves[] = {DataType::float16, DataType::bfloat16};

// The unit roundoff of a 16-bit dtype: 2^-11 for float16, 2^-8 for bfloat16.
double unit_roundoff(DataType t) { return t == DataType::float16 ? 0x1p-11 : 0x1p-8; }

// Values exactly representable in `t`: a float32 draw rounded to t.
NDArray representable(NDManager& m, const Shape& shape, DataType t, double low, double high) {
  return m.random_uniform(shape, low, high).to_type(t);
}

// One kernel: f on the 16-bit array equals f on its float32 values, rounded once.
void check_rounded_once(const char* name, NDManager& m, const HalfOp& f, double low = -2, double high = 2,
                        const Shape& shape = Shape{5, 7}) {
  for (DataType t : kHalves) {
    const std::string op_name = name;
    CAPTURE(op_name);
    CAPTURE(to_string(t));
    const NDArray x = representable(m, shape, t, low, high);
    const NDArray got = f(x);
    const NDArray want = f(x.to_type(DataType::float32));
    const DataType stored = want.dtype() == DataType::float32 ? t : want.dtype();
    REQUIRE(got.dtype() == stored);
    const std::vector<double> g = got.to_vector<double>(), w = want.to_type(stored).to_vector<double>();
    REQUIRE(g.size() == w.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
      CAPTURE(i);
      if (std::isnan(w[i])) CHECK(std::isnan(g[i]));
      else CHECK(g[i] == w[i]);
    }
  }
}

// Within `roundings` unit roundoffs of the float32 result, relative to its largest magnitude.
void check_close(const NDArray& got, const NDArray& want, DataType t, double roundings) {
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  REQUIRE(g.size() == w.size());
  double scale = 1e-30;
  for (double v : w) scale = std::max(scale, std::fabs(v));
  for (std::size_t i = 0; i < g.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(g[i] - w[i]) <= roundings * unit_roundoff(t) * scale);
  }
}

// f composed of several kernels, and its gradient, against float32 from the same values.
void check_composed(const char* name, NDManager& m, const std::vector<Shape>& shapes,
                    const std::function<NDArray(const std::vector<NDArray>&)>& f, double roundings = 16) {
  for (DataType t : kHalves) {
    const std::string op_name = name;
    CAPTURE(op_name);
    CAPTURE(to_string(t));
    std::vector<NDArray> half, single;
    for (const Shape& s : shapes) {
      half.push_back(representable(m, s, t, -1, 1).set_requires_gradient(true));
      single.push_back(half.back().to_type(DataType::float32).set_requires_gradient(true));
    }
    // loss = sum(out · w), w fixed random weights: every output element gets its own seed.
    NDArray out_half, out_single;
    {
      GradientCollector c;
      out_half = f(half);
      set_random_seed(99);
      c.backward(out_half.to_type(DataType::float32).mul(m.random_normal(out_half.shape())).sum());
    }
    {
      GradientCollector c;
      out_single = f(single);
      set_random_seed(99);
      c.backward(out_single.mul(m.random_normal(out_single.shape())).sum());
    }
    REQUIRE(out_half.dtype() == t);
    check_close(out_half, out_single, t, roundings);
    for (std::size_t i = 0; i < half.size(); ++i) {
      CAPTURE(i);
      REQUIRE(half[i].gradient().dtype() == t);
      check_close(half[i].gradient(), single[i].gradient(), t, roundings * 4);
    }
  }
}

}  // namespace

TEST_CASE("16-bit: element-wise ops are the float32 result rounded once") {
  NDManager m = NDManager::new_base_manager("half-elementwise");
  set_random_seed(11);
  check_rounded_once("neg", m, [](const NDArray& x) { return x.neg(); });
  check_rounded_once("abs", m, [](const NDArray& x) { return x.abs(); });
  check_rounded_once("exp", m, [](const NDArray& x) { return x.exp(); });
  check_rounded_once("log", m, [](const NDArray& x) { return x.log(); }, 0.1, 3);
  check_rounded_once("sqrt", m, [](const NDArray& x) { return x.sqrt(); }, 0, 3);
  check_rounded_once("square", m, [](const NDArray& x) { return x.square(); });
  check_rounded_once("relu", m, [](const NDArray& x) { return x.relu(); });
  check_rounded_once("sigmoid", m, [](const NDArray& x) { return x.sigmoid(); });
  check_rounded_once("tanh", m, [](const NDArray& x) { return x.tanh(); });
  check_rounded_once("gelu", m, [](const NDArray& x) { return x.gelu(); });
  check_rounded_once("floor", m, [](const NDArray& x) { return x.floor(); });
  check_rounded_once("round", m, [](const NDArray& x) { return x.round(); });
  check_rounded_once("sin", m, [](const NDArray& x) { return x.sin(); });
  check_rounded_once("asin", m, [](const NDArray& x) { return x.asin(); }, -0.9, 0.9);
  check_rounded_once("acosh", m, [](const NDArray& x) { return x.acosh(); }, 1, 4);
  check_rounded_once("erf", m, [](const NDArray& x) { return x.erf(); });
  check_rounded_once("add", m, [](const NDArray& x) { return x.add(x.mul(0.5)); });
  check_rounded_once("div", m, [](const NDArray& x) { return x.div(x.get(NDIndex("0"))); });
  check_rounded_once("pow", m, [](const NDArray& x) { return x.pow(x); }, 0.1, 2);
  check_rounded_once("broadcast sub", m, [](const NDArray& x) { return x.sub(x.get(NDIndex("0"))); });
  check_rounded_once("rdiv", m, [](const NDArray& x) { return x.rdiv(3.0); }, 0.5, 2);
  check_rounded_once("maximum", m, [](const NDArray& x) { return x.maximum(0.25); });
  check_rounded_once("where", m, [](const NDArray& x) { return where(x.gt(0.0), x, x.neg()); });
  check_rounded_once("comparison", m, [](const NDArray& x) { return x.ge(x.mean()); });
}

TEST_CASE("16-bit: reductions and softmax accumulate in float32, rounded once (products: bf16_matmul_test.cpp)") {
  NDManager m = NDManager::new_base_manager("half-reduce");
  set_random_seed(12);
  check_rounded_once("sum", m, [](const NDArray& x) { return x.sum(); }, -2, 2, Shape{64, 33});
  check_rounded_once("sum axis", m, [](const NDArray& x) { return x.sum({1}); }, -2, 2, Shape{64, 33});
  check_rounded_once("mean", m, [](const NDArray& x) { return x.mean(); }, -2, 2, Shape{64, 33});
  check_rounded_once("max", m, [](const NDArray& x) { return x.max({0}); });
  check_rounded_once("argmax", m, [](const NDArray& x) { return x.argmax(1); });
  check_rounded_once("softmax", m, [](const NDArray& x) { return x.softmax(1); });
  check_rounded_once("log_softmax", m, [](const NDArray& x) { return x.log_softmax(1); });
  check_rounded_once("cross-entropy", m, [](const NDArray& x) {
    NDArray labels = x.argmin(1);
    return sparse_softmax_cross_entropy(x, labels);
  });
}

TEST_CASE("16-bit: factories, views, copies and to_vector") {
  NDManager m = NDManager::new_base_manager("half-factories");
  for (DataType t : kHalves) {
    CAPTURE(to_string(t));
    CHECK(m.zeros({2, 3}, t).to_vector<float>() == std::vector<float>(6, 0.f));
    CHECK(m.ones({2}, t).dtype() == t);
    CHECK(m.full({2}, 0.1, t).to_vector<double>()[0] != 0.1);  // rounded: 0.1 has no 16-bit form
    const NDArray r = m.arange(0, 8, 1, t);
    CHECK(r.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
    NDArray a = m.arange(0, 12, 1, t).reshape({3, 4});
    CHECK(a.transpose().contiguous().to_vector<float>() ==
          std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
    CHECK(a.get(NDIndex("1, 1:3")).to_vector<float>() == std::vector<float>{5, 6});
    CHECK(a.nbytes() == 24);
    CHECK(a.to_string().find(std::string(to_string(t))) != std::string::npos);
  }
  const NDArray b = m.create(std::vector<ndgc::bfloat16>{bfloat16(1.5f), bfloat16(-2.0f)});
  CHECK(b.dtype() == DataType::bfloat16);
  const std::vector<ndgc::bfloat16> back = b.to_vector<ndgc::bfloat16>();
  CHECK(back[1].bits == bfloat16(-2.0f).bits);
  CHECK(m.create(std::vector<float>{3.14159f}).to_type(DataType::bfloat16).item<float>() == 3.140625f);
  CHECK(m.create(std::vector<float>{3.14159f}).to_type(DataType::float16).item<ndgc::float16>().bits ==
        float16(3.14159f).bits);
  // The random factories draw in float32 and round.
  set_random_seed(5);
  const std::vector<float> u = m.random_uniform({1000}, -1, 1, DataType::bfloat16).to_vector<float>();
  for (float v : u) CHECK((v >= -1 && v <= 1));
}

TEST_CASE("16-bit: an op given 16- and 32-bit operands is a DTypeMismatch naming both") {
  NDManager m = NDManager::new_base_manager("half-mixed");
  NDArray a = m.ones({2}, DataType::bfloat16), b = m.ones({2});
  a.set_name("a");
  b.set_name("b");
  CHECK_THROWS_WITH_AS(a.add(b), doctest::Contains("bfloat16"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(a.add(b), doctest::Contains("float32"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(a.add(b), doctest::Contains("'b'"), DTypeMismatch);
  CHECK_THROWS_WITH_AS(a.matmul(b), doctest::Contains("'a'"), DTypeMismatch);
}

TEST_CASE("16-bit: float16 overflow gives inf, not garbage") {
  NDManager m = NDManager::new_base_manager("half-overflow");
  NDArray x = m.full({3}, 60000.0, DataType::float16);
  const std::vector<float> twice = x.mul(2.0).to_vector<float>();
  for (float v : twice) CHECK(std::isinf(v));
  CHECK(std::isinf(x.sum().item<float>()));            // 180000: the float32 sum rounds to inf
  CHECK(x.mean().item<float>() == 60000.0f);           // accumulated in float32, no overflow on the way
  CHECK(std::isinf(m.full({1}, 1e6, DataType::float32).to_type(DataType::float16).item<float>()));
  CHECK(m.full({1}, 1e6, DataType::float32).to_type(DataType::bfloat16).item<float>() == 999424.0f);
}

TEST_CASE("16-bit: layers and their gradients stay within a few roundings of float32") {
  NDManager m = NDManager::new_base_manager("half-layers");
  set_random_seed(13);
  check_composed("linear", m, {{6, 5}, {5, 4}, {4}}, [](const std::vector<NDArray>& x) {
    return linear(x[0], x[1], x[2]);
  });
  check_composed("conv2d", m, {{2, 3, 6, 6}, {4, 3, 3, 3}, {4}}, [](const std::vector<NDArray>& x) {
    return conv2d(x[0], x[1], x[2], {1, 1}, {1, 1});
  });
  check_composed("max_pool2d", m, {{2, 3, 6, 6}}, [](const std::vector<NDArray>& x) {
    return max_pool2d(x[0], {2, 2}, {2, 2});
  });
  check_composed("avg_pool2d", m, {{2, 3, 6, 6}}, [](const std::vector<NDArray>& x) {
    return avg_pool2d(x[0], {3, 3}, {2, 2}, {1, 1});
  });
  check_composed("layer_norm", m, {{4, 8}, {8}, {8}}, [](const std::vector<NDArray>& x) {
    return layer_norm(x[0], x[1], x[2]);
  }, 64);
  check_composed("batch_norm", m, {{8, 3, 2, 2}, {3}, {3}}, [&m](const std::vector<NDArray>& x) {
    NDArray mean = m.zeros({3}, x[0].dtype()), var = m.ones({3}, x[0].dtype());
    return batch_norm(x[0], x[1], x[2], mean, var, true);
  }, 64);
  check_composed("softmax", m, {{4, 9}}, [](const std::vector<NDArray>& x) { return x[0].softmax(1); });
  check_composed("tanh", m, {{4, 9}}, [](const std::vector<NDArray>& x) { return x[0].tanh().mul(x[0]); });
  check_composed("lstm", m, {{3, 2, 4}, {4, 16}, {4, 16}, {16}}, [](const std::vector<NDArray>& x) {
    return lstm(x[0], NDList{x[1], x[2], x[3]})[0];
  }, 64);
}

TEST_CASE("16-bit: dropout draws the float32 mask; embedding gathers exactly") {
  NDManager m = NDManager::new_base_manager("half-dropout");
  for (DataType t : kHalves) {
    CAPTURE(to_string(t));
    NDArray x = representable(m, {50}, t, -1, 1);
    set_random_seed(3);
    const std::vector<float> half = dropout(x, 0.5, true).to_vector<float>();
    set_random_seed(3);
    const std::vector<float> single = dropout(x.to_type(DataType::float32), 0.5, true).to_type(t).to_vector<float>();
    CHECK(half == single);
    NDArray w = representable(m, {5, 3}, t, -1, 1);
    NDArray rows = embedding(m.create(std::vector<std::int64_t>{4, 0}), w);
    CHECK(rows.dtype() == t);
    CHECK(rows.to_vector<float>() == w.get(NDIndex("4")).concat(w.get(NDIndex("0")), 0).to_vector<float>());
  }
}

TEST_CASE("16-bit: the same bits at 1, 2 and 3 threads") {
  NDManager m = NDManager::new_base_manager("half-threads");
  const int before = num_threads();
  for (DataType t : kHalves) {
    CAPTURE(to_string(t));
    set_random_seed(21);
    NDArray a = representable(m, {96, 130}, t, -1, 1), b = representable(m, {130, 70}, t, -1, 1);
    NDArray img = representable(m, {4, 3, 20, 20}, t, -1, 1), k = representable(m, {5, 3, 3, 3}, t, -1, 1);
    std::vector<std::vector<float>> runs;
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      std::vector<float> v = a.matmul(b).to_vector<float>();
      for (float s : a.sum({1}).to_vector<float>()) v.push_back(s);
      for (float s : a.softmax(0).to_vector<float>()) v.push_back(s);
      for (float s : conv2d(img, k, NDArray{}).to_vector<float>()) v.push_back(s);
      runs.push_back(std::move(v));
    }
    CHECK(runs[0] == runs[1]);
    CHECK(runs[0] == runs[2]);
  }
  set_num_threads(before);
}

}  // namespace ndgc

namespace ndgc {

TEST_CASE("16-bit: operands larger than a slice give the same bits as float32 rounded (Note [Widening in slices])") {
  NDManager m = NDManager::new_base_manager("half-slices");
  set_random_seed(41);
  const Shape big{300, 501};  // 150,300 elements: ten slices of axis 0
  check_rounded_once("big tanh", m, [](const NDArray& x) { return x.tanh(); }, -2, 2, big);
  check_rounded_once("big broadcast sub", m, [](const NDArray& x) { return x.sub(x.get(NDIndex("0"))); }, -2, 2, big);
  check_rounded_once("big where", m, [](const NDArray& x) { return where(x.gt(0.0), x, x.mul(0.5)); }, -2, 2, big);
  check_rounded_once("big dropout", m, [](const NDArray& x) {
    set_random_seed(8);
    return dropout(x, 0.3, true);
  }, -2, 2, big);
  // Per-image kernels (pools, col2im) in slices of images: the batch's bits are each image's alone.
  for (DataType t : kHalves) {
    CAPTURE(to_string(t));
    NDArray x = representable(m, {40, 3, 24, 24}, t, -1, 1).set_requires_gradient(true);
    NDArray k = representable(m, {4, 3, 3, 3}, t, -1, 1);
    auto net = [&](const NDArray& images) {
      return max_pool2d(conv2d(images, k, NDArray{}, {1, 1}, {1, 1}).relu(), {2, 2}, {2, 2});
    };
    NDArray y;
    {
      GradientCollector c;
      y = net(x);
      c.backward(y.to_type(DataType::float32).sum());
    }
    const std::vector<float> batch_y = y.to_vector<float>(), batch_dx = x.gradient().to_vector<float>();
    std::vector<float> image_y, image_dx;
    for (std::int64_t i = 0; i < 40; ++i) {
      NDArray one = x.get(NDIndex().add_slice(i, i + 1)).dup().set_requires_gradient(true);
      NDArray yi;
      {
        GradientCollector c;
        yi = net(one);
        c.backward(yi.to_type(DataType::float32).sum());
      }
      for (float v : yi.to_vector<float>()) image_y.push_back(v);
      for (float v : one.gradient().to_vector<float>()) image_dx.push_back(v);
    }
    CHECK(batch_y == image_y);
    CHECK(batch_dx == image_dx);
  }
}

TEST_CASE("16-bit: fills and reductions widen in slices too: their scratch stays far under a float32 copy, "
          "and sums are the float32 result rounded once") {
  NDManager m = NDManager::new_base_manager("half-slice-peaks");
  set_random_seed(43);
  const Shape big{300, 2001};  // 600,300 elements: a float32 copy is 2.4 MB
  const std::uint64_t float32_copy = std::uint64_t(big.size()) * 4, slack = 512 << 10;
  check_rounded_once("big sum over rows", m, [](const NDArray& x) { return x.sum({0}); }, -2, 2, big);
  check_rounded_once("big sum over columns", m, [](const NDArray& x) { return x.sum({1}); }, -2, 2, big);
  for (DataType t : kHalves) {
    CAPTURE(to_string(t));
    NDArray x = m.random_uniform(big).to_type(t);
    memory::reset_peak(Device::cpu());
    std::uint64_t base = memory::stats(Device::cpu()).current_bytes;
    NDArray zeros = m.zeros(big, t);  // a backward pass's zeros (get's gradient) are such fills
    const std::uint64_t fill_peak = memory::stats(Device::cpu()).peak_bytes - base;
    CHECK(zeros.to_type(DataType::float32).abs().sum().to_vector<float>()[0] == 0.0f);
    CHECK(fill_peak < zeros.nbytes() + slack);
    memory::reset_peak(Device::cpu());
    base = memory::stats(Device::cpu()).current_bytes;
    NDArray column_sums = x.sum({0});  // a bias gradient's sum over the batch
    const std::uint64_t reduce_peak = memory::stats(Device::cpu()).peak_bytes - base;
    CHECK(reduce_peak < slack);
    CHECK(reduce_peak < float32_copy / 4);
    MESSAGE(to_string(t) << ": fill scratch " << fill_peak - zeros.nbytes() << " B, sum over rows " << reduce_peak
                         << " B, against " << float32_copy << " B widened whole");
  }
}

// An LSTM weight gradient's accumulation, [512, 128]: a binary op widens its
// two operands and its output, and at 2^16 elements a slice those three were
// 768 KiB of float32 scratch, the bf16 LSTM step's peak. Now 64 KiB each.
TEST_CASE("16-bit: a binary op's scratch is three slices of at most 64 KiB each, whatever its operands' size") {
  NDManager m = NDManager::new_base_manager("half-binary-scratch");
  for (DataType t : kHalves) {
    CAPTURE(to_string(t));
    NDArray a = m.random_uniform({512, 128}).to_type(t), b = m.random_uniform({512, 128}).to_type(t);
    memory::reset_peak(Device::cpu());
    const std::uint64_t base = memory::stats(Device::cpu()).current_bytes;
    NDArray sum = a.add(b);
    const std::uint64_t scratch = memory::stats(Device::cpu()).peak_bytes - base - sum.nbytes();
    CHECK(scratch <= 3 * (64 << 10) + (16 << 10));
    MESSAGE(to_string(t) << ": binary scratch " << scratch << " B");
  }
}

// A bias added over a batch of images: the bias broadcast along the images
// and pixels is widened once (its 16 values), not copied out to each slice's
// 16,384 elements (it was a third 64 KiB slice), and the sum has the bits of
// float32 rounded once.
TEST_CASE("16-bit: a broadcast operand is widened once along its broadcast axes, with the same bits") {
  NDManager m = NDManager::new_base_manager("half-broadcast-scratch");
  for (DataType t : kHalves) {
    CAPTURE(to_string(t));
    const NDArray x = m.random_uniform({64, 16, 8, 8}).to_type(t), bias = m.random_uniform({16, 1, 1}).to_type(t);
    memory::reset_peak(Device::cpu());
    const std::uint64_t base = memory::stats(Device::cpu()).current_bytes;
    const NDArray sum = x.add(bias);
    const std::uint64_t scratch = memory::stats(Device::cpu()).peak_bytes - base - sum.nbytes();
    CHECK(scratch <= 2 * (64 << 10) + (16 << 10));  // x's and the output's slices; the bias: 64 B
    const NDArray wide = x.to_type(DataType::float32).add(bias.to_type(DataType::float32)).to_type(t);
    CHECK(sum.to_type(DataType::float32).to_vector<float>() == wide.to_type(DataType::float32).to_vector<float>());
    MESSAGE(to_string(t) << ": broadcast binary scratch " << scratch << " B");
  }
}

// A convolution's gradients are batched products, one item per image. Where
// the CPU has no native 16-bit product (float16 here) they widen in slices of
// items: a float32 copy of every operand at once was the fp16 CNN step's peak.
TEST_CASE("16-bit: a batched product widens a slice of items at a time, each item with its bits alone") {
  NDManager m = NDManager::new_base_manager("half-batched-product");
  set_random_seed(47);
  for (DataType t : kHalves) {
    CAPTURE(to_string(t));
    NDArray a = representable(m, {64, 32, 64}, t, -1, 1), b = representable(m, {64, 64, 256}, t, -1, 1);
    memory::reset_peak(Device::cpu());
    const std::uint64_t base = memory::stats(Device::cpu()).current_bytes;
    NDArray y = a.matmul(b);
    const std::uint64_t scratch = memory::stats(Device::cpu()).peak_bytes - base - y.nbytes();
    CHECK(scratch < (512 << 10));  // whole, the float32 copies were 6.8 MB
    MESSAGE(to_string(t) << ": batched product scratch " << scratch << " B");
    for (std::int64_t i : {0, 17, 63}) {
      CAPTURE(i);
      const NDArray alone = a.get(NDIndex().add_index(i)).matmul(b.get(NDIndex().add_index(i)));
      CHECK(alone.to_vector<float>() == y.get(NDIndex().add_index(i)).to_vector<float>());
    }
  }
}

TEST_CASE("16-bit: linear is one output array with matmul(x, w).add(b)'s bits") {
  NDManager m = NDManager::new_base_manager("half-linear");
  set_random_seed(47);
  for (DataType t : kHalves) {
    CAPTURE(to_string(t));
    NDArray x = m.random_uniform({896, 28}).to_type(t), w = m.random_uniform({28, 512}).to_type(t),
            b = m.random_uniform({512}).to_type(t);
    const std::vector<float> want = x.matmul(w).add(b).to_type(DataType::float32).to_vector<float>();
    memory::reset_peak(Device::cpu());
    const std::uint64_t base = memory::stats(Device::cpu()).current_bytes;
    NDArray y = linear(x, w, b);
    const std::uint64_t peak = memory::stats(Device::cpu()).peak_bytes - base;
    CHECK(y.to_type(DataType::float32).to_vector<float>() == want);
    // The product and the sum were two arrays of y's size. (float16 products,
    // and bfloat16 ones without AVX512-BF16, as under Valgrind, widen their
    // operands whole, so only bfloat16's native product shows it.)
    if (t == DataType::bfloat16 && support::cpu_has_avx512_bf16()) CHECK(peak < 2 * y.nbytes());
  }
}

}  // namespace ndgc
