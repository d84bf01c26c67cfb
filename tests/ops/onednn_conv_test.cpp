// Note [Convolutions through oneDNN]: float32 convolutions through oneDNN's
// convolution primitive, each geometry against a double-precision loop,
// strided inputs, the cases left to im2col, four threads at once, and the
// convolutions ndgc's conv2d sends there.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "ndgc/ndgc.hpp"
#include "ops/cpu/onednn_conv.hpp"
#include "test_util.hpp"

namespace ndgc {
namespace {

using ops::TensorView;
using ops::Window2d;

struct Geometry {
  std::int64_t n, c, h, w, o, k, stride, padding, dilation, groups;
  std::int64_t out(std::int64_t in) const { return (in + 2 * padding - dilation * (k - 1) - 1) / stride + 1; }
  Window2d window() const {
    Window2d win;
    for (int a = 0; a < 2; ++a) {
      win.kernel[a] = k;
      win.stride[a] = stride;
      win.padding[a] = padding;
      win.dilation[a] = dilation;
    }
    win.groups = groups;
    return win;
  }
};

float value(std::int64_t i, std::uint32_t seed) { return float(int((i * 37 + seed) % 29) - 14) / 16.0f; }

std::vector<float> filled(std::int64_t count, std::uint32_t seed) {
  std::vector<float> v(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) v[std::size_t(i)] = value(i, seed);
  return v;
}

TensorView view(std::vector<float>& data, const Shape& shape) {
  return ops::contiguous_view(data.data(), DataType::float32, shape);
}

// The convolution as a double-precision loop over x read through `xv`'s
// strides, plus `bias` where it has one value per output channel.
std::vector<double> reference(const Geometry& g, const TensorView& xv, const std::vector<float>& weight,
                              const std::vector<float>& bias) {
  const std::int64_t oh = g.out(g.h), ow = g.out(g.w), cg = g.c / g.groups, og = g.o / g.groups;
  const float* x = static_cast<const float*>(xv.data);
  std::vector<double> y(std::size_t(g.n * g.o * oh * ow), 0.0);
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t o = 0; o < g.o; ++o)
      for (std::int64_t oy = 0; oy < oh; ++oy)
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          double sum = bias.empty() ? 0.0 : bias[std::size_t(o)];
          for (std::int64_t ci = 0; ci < cg; ++ci)
            for (std::int64_t ky = 0; ky < g.k; ++ky)
              for (std::int64_t kx = 0; kx < g.k; ++kx) {
                const std::int64_t iy = oy * g.stride - g.padding + ky * g.dilation;
                const std::int64_t ix = ox * g.stride - g.padding + kx * g.dilation;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                const std::int64_t c = o / og * cg + ci;
                sum += double(x[n * xv.strides[0] + c * xv.strides[1] + iy * xv.strides[2] + ix * xv.strides[3]]) *
                       weight[std::size_t(((o * cg + ci) * g.k + ky) * g.k + kx)];
              }
          y[std::size_t(((n * g.o + o) * oh + oy) * ow + ox)] = sum;
        }
  return y;
}

// onednn_conv2d of x (through `xv`), with a bias or without, against the
// loop; true when it served it.
bool check_geometry(const Geometry& g, const TensorView& xv, bool with_bias) {
  std::vector<float> weight = filled(g.o * (g.c / g.groups) * g.k * g.k, 3);
  std::vector<float> bias = with_bias ? filled(g.o, 11) : std::vector<float>{};
  std::vector<float> y(std::size_t(g.n * g.o * g.out(g.h) * g.out(g.w)), -9.0f);
  const TensorView wv = view(weight, Shape{g.o, g.c / g.groups, g.k, g.k}), bv = view(bias, Shape{g.o});
  const TensorView yv = view(y, Shape{g.n, g.o, g.out(g.h), g.out(g.w)});
  if (!ops::cpu::onednn_conv2d(xv, wv, with_bias ? &bv : nullptr, g.window(), yv)) return false;
  const std::vector<double> want = reference(g, xv, weight, bias);
  int wrong = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!(y[i] == doctest::Approx(want[i]).epsilon(1e-5).scale(4.0))) ++wrong;
  CHECK(wrong == 0);
  return true;
}

bool check_geometry(const Geometry& g, bool with_bias) {
  std::vector<float> x = filled(g.n * g.c * g.h * g.w, 1);
  return check_geometry(g, view(x, Shape{g.n, g.c, g.h, g.w}), with_bias);
}

bool skipped() {
  if (ops::cpu::onednn_enabled()) return false;
  MESSAGE("skipped: float32 convolutions do not go to oneDNN in this build or on this CPU");
  return true;
}

}  // namespace

TEST_CASE("oneDNN convolutions: strides, padding, dilation, groups, odd channel counts, a bias or none, against a "
          "loop") {
  if (skipped()) return;
  const Geometry cases[] = {
      {2, 16, 20, 20, 32, 3, 1, 1, 1, 1},   // a plain 3 x 3
      {3, 3, 33, 31, 24, 7, 2, 3, 1, 1},    // a first layer: 3 channels, 7 x 7, stride 2, odd sizes
      {2, 32, 14, 14, 64, 1, 2, 0, 1, 1},   // 1 x 1, stride 2
      {2, 20, 17, 19, 12, 3, 1, 2, 2, 1},   // dilation 2, channels not in 16s
      {2, 32, 16, 16, 32, 3, 1, 1, 1, 4},   // 4 groups
      {2, 32, 48, 48, 32, 3, 2, 1, 1, 32},  // depthwise, stride 2
      {1, 64, 28, 28, 128, 3, 1, 1, 1, 1},  // halved: two blocks of output channels
      {2, 16, 47, 47, 32, 4, 3, 0, 1, 1},   // the last window stops short of the edge
  };
  for (const Geometry& g : cases) {
    CAPTURE(g.c);
    CAPTURE(g.o);
    CAPTURE(g.k);
    CAPTURE(g.groups);
    CHECK(check_geometry(g, false));
    CHECK(check_geometry(g, true));
  }
}

TEST_CASE("oneDNN convolutions read a strided x: every other image, and H and W transposed in memory") {
  if (skipped()) return;
  const Geometry g{3, 16, 12, 10, 32, 3, 1, 1, 1, 1};
  std::vector<float> x = filled(2 * g.n * g.c * g.h * g.w, 5);
  TensorView xv = view(x, Shape{2 * g.n, g.c, g.w, g.h});  // stored [N, C, W, H]
  xv = xv.narrow(0, 0, g.n);
  xv.strides[0] *= 2;  // every other image
  std::swap(xv.shape[2], xv.shape[3]);
  std::swap(xv.strides[2], xv.strides[3]);
  CHECK_FALSE(xv.is_contiguous());
  CHECK(check_geometry(g, xv, true));
}

TEST_CASE("oneDNN convolutions: what is left to im2col, with the output untouched") {
  std::vector<float> x(2 * 16 * 16 * 16, 1.0f), weight(32 * 16 * 9, 1.0f), bias(64, 1.0f),
      y(2 * 32 * 16 * 16, -9.0f);
  const Window2d w = Geometry{2, 16, 16, 16, 32, 3, 1, 1, 1, 1}.window();
  const TensorView xv = view(x, Shape{2, 16, 16, 16}), wv = view(weight, Shape{32, 16, 3, 3});
  const TensorView yv = view(y, Shape{2, 32, 16, 16});
  if (ops::cpu::onednn_enabled()) {  // the case the refusals below each change one thing of
    REQUIRE(ops::cpu::onednn_conv2d(xv, wv, nullptr, w, yv));
    y.assign(y.size(), -9.0f);
  }
  const TensorView small_x = view(x, Shape{2, 4, 8, 8}), small_w = view(weight, Shape{8, 4, 3, 3});
  CHECK_FALSE(ops::cpu::onednn_conv2d(small_x, small_w, nullptr, w, view(y, Shape{2, 8, 8, 8})));  // 18,432 an image
  std::vector<double> wide(1);
  TensorView dv = ops::contiguous_view(wide.data(), DataType::float64, Shape{1, 1, 1, 1});
  CHECK_FALSE(ops::cpu::onednn_conv2d(dv, dv, nullptr, w, dv));  // not float32
  TensorView padded = yv;
  padded.strides[1] *= 2;
  CHECK_FALSE(ops::cpu::onednn_conv2d(xv, wv, nullptr, w, padded));  // y not contiguous
  TensorView empty = xv;
  empty.shape[0] = 0;
  CHECK_FALSE(ops::cpu::onednn_conv2d(empty, wv, nullptr, w, yv));
  TensorView broadcast = xv;
  broadcast.strides[1] = 0;
  CHECK_FALSE(ops::cpu::onednn_conv2d(broadcast, wv, nullptr, w, yv));  // an axis that does not step
  TensorView strided_bias = view(bias, Shape{32});
  strided_bias.strides[0] = 2;
  CHECK_FALSE(ops::cpu::onednn_conv2d(xv, wv, &strided_bias, w, yv));
  const TensorView short_bias = view(bias, Shape{16});
  CHECK_FALSE(ops::cpu::onednn_conv2d(xv, wv, &short_bias, w, yv));
  CHECK(y == std::vector<float>(y.size(), -9.0f));
}

TEST_CASE("oneDNN convolutions: an image is cut in two halves of output channels only when each half is large") {
  using ops::cpu::onednn_conv_blocks;
  CHECK(onednn_conv_blocks(64, 1, std::int64_t(1) << 24) == 2);
  CHECK(onednn_conv_blocks(64, 1, std::int64_t(1) << 22) == 1);  // halves of 2^21
  CHECK(onednn_conv_blocks(48, 1, std::int64_t(1) << 24) == 1);  // halves of 24: not whole 16s
  CHECK(onednn_conv_blocks(64, 2, std::int64_t(1) << 24) == 1);  // grouped
  CHECK(onednn_conv_blocks(16, 1, std::int64_t(1) << 30) == 1);
}

TEST_CASE("oneDNN convolutions from four threads at once, through more geometries than a thread keeps") {
  if (skipped()) return;
  // 40 geometries, one more padding row each: past the 32 a thread keeps, so
  // the least recently used are dropped and made again.
  std::vector<Geometry> geometries;
  for (std::int64_t p = 0; p < 40; ++p) geometries.push_back({1, 16, 24 + p, 24, 16, 3, 1, 1, 1, 1});
  std::vector<std::vector<float>> inputs, weights, wants;
  for (const Geometry& g : geometries) {
    inputs.push_back(filled(g.c * g.h * g.w, std::uint32_t(g.h)));
    weights.push_back(filled(g.o * g.c * 9, 7));
    wants.emplace_back(std::size_t(g.o * g.out(g.h) * g.out(g.w)));
    REQUIRE(ops::cpu::onednn_conv2d(view(inputs.back(), Shape{1, g.c, g.h, g.w}),
                                    view(weights.back(), Shape{g.o, g.c, 3, 3}), nullptr, g.window(),
                                    view(wants.back(), Shape{1, g.o, g.out(g.h), g.out(g.w)})));
  }
  std::atomic<int> mismatches{0}, unserved{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> out;
      for (std::size_t round = 0; round < 2 * geometries.size(); ++round) {
        const std::size_t i = (round * 7 + std::size_t(t) * 5) % geometries.size();
        const Geometry& g = geometries[i];
        out.assign(wants[i].size(), -1.0f);
        if (!ops::cpu::onednn_conv2d(view(inputs[i], Shape{1, g.c, g.h, g.w}), view(weights[i], Shape{g.o, g.c, 3, 3}),
                                     nullptr, g.window(), view(out, Shape{1, g.o, g.out(g.h), g.out(g.w)})))
          ++unserved;
        else if (out != wants[i])
          ++mismatches;
      }
    });
  for (std::thread& t : threads) t.join();
  CHECK(unserved == 0);
  CHECK(mismatches == 0);
}

TEST_CASE("ndgc's float32 conv2d goes to oneDNN where it is enabled: the same bits at 1, 2 and 3 threads and "
          "for an image alone") {
  NDManager m = NDManager::new_base_manager("onednn-conv-threads");
  set_random_seed(9);
  NDArray x = m.random_uniform({3, 32, 20, 20}), w = m.random_uniform({64, 32, 3, 3}),
          b = m.random_uniform({64});
  std::vector<std::vector<float>> results;
  std::uint64_t tasks = 0;
  for (int threads : {1, 2, 3}) {
    test::Threads t(threads);
    const std::uint64_t before = ops::cpu::onednn_convolutions();
    results.push_back(conv2d(x, w, b, {1, 1}, {1, 1}).to_vector<float>());
    tasks = ops::cpu::onednn_convolutions() - before;
  }
  CHECK(results[0] == results[1]);
  CHECK(results[0] == results[2]);
  // 64 x 400 x 288 multiply-adds an image: halves of 3.7 M, under 2^22, so one task an image.
  CHECK(tasks == (ops::cpu::onednn_enabled() ? 3u : 0u));
  const std::vector<float> alone = conv2d(x.get("1:2"), w, b, {1, 1}, {1, 1}).to_vector<float>();
  const std::size_t per_image = alone.size();
  CHECK(std::vector<float>(results[0].begin() + std::ptrdiff_t(per_image),
                           results[0].begin() + std::ptrdiff_t(2 * per_image)) == alone);
  // A strided bias is added apart, after the convolution: the same values.
  const NDArray every_other = stack(NDList{b, b}, 1).get(":, 0");
  REQUIRE_FALSE(every_other.is_contiguous());
  const std::vector<float> strided = conv2d(x, w, every_other, {1, 1}, {1, 1}).to_vector<float>();
  for (std::size_t i = 0; i < strided.size(); i += 89)
    CHECK(strided[i] == doctest::Approx(results[0][i]).epsilon(1e-5).scale(4.0));
  // Against float64 (im2col and Eigen): the same values to float32's rounding.
  const std::vector<double> wide = conv2d(x.to_type(DataType::float64), w.to_type(DataType::float64),
                                          b.to_type(DataType::float64), {1, 1}, {1, 1})
                                       .to_vector<double>();
  for (std::size_t i = 0; i < wide.size(); i += 97)
    CHECK(results[0][i] == doctest::Approx(wide[i]).epsilon(1e-5).scale(4.0));
}

TEST_CASE("ndgc's bfloat16 conv2d goes to oneDNN where the CPU has AVX512-BF16: float32's result rounded, within "
          "a unit; the same bits at 1, 2 and 3 threads and for an image alone") {
  if (!ops::cpu::onednn_conv_16()) {
    MESSAGE("skipped: bfloat16 convolutions do not go to oneDNN here (a build without it, NDGC_CPU_GEMM, no "
            "AVX512-BF16)");
    return;
  }
  NDManager m = NDManager::new_base_manager("onednn-conv-bf16");
  set_random_seed(10);
  const DataType t = DataType::bfloat16;
  NDArray x = m.random_uniform({3, 32, 20, 20}, -1, 1).to_type(t), w = m.random_uniform({64, 32, 3, 3}, -1, 1).to_type(t),
          b = m.random_uniform({64}, -1, 1).to_type(t);
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 3}) {
    test::Threads th(threads);
    const std::uint64_t before = ops::cpu::onednn_convolutions();
    results.push_back(conv2d(x, w, b, {1, 1}, {1, 1}).to_type(DataType::float32).to_vector<float>());
    CHECK(ops::cpu::onednn_convolutions() - before == 3u);  // one task an image
  }
  CHECK(results[0] == results[1]);
  CHECK(results[0] == results[2]);
  const std::vector<float> alone = conv2d(x.get("1:2"), w, b, {1, 1}, {1, 1}).to_type(DataType::float32).to_vector<float>();
  CHECK(std::vector<float>(results[0].begin() + std::ptrdiff_t(alone.size()),
                           results[0].begin() + std::ptrdiff_t(2 * alone.size())) == alone);
  // Against the float32 convolution of the same values: within a bfloat16
  // unit of it, plus 2^-16 of Σ|x||w| for the sums' order and subnormals.
  const NDArray x32 = x.to_type(DataType::float32), w32 = w.to_type(DataType::float32);
  const std::vector<float> want = conv2d(x32, w32, b.to_type(DataType::float32), {1, 1}, {1, 1}).to_vector<float>();
  const std::vector<float> mag = conv2d(x32.abs(), w32.abs(), b.to_type(DataType::float32).abs(), {1, 1}, {1, 1})
                                     .to_vector<float>();
  REQUIRE(want.size() == results[0].size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(results[0][i] - want[i]) <= 0x1p-8 * std::fabs(want[i]) + 0x1p-16 * mag[i]);
  }
}

TEST_CASE("ndgc's float32 conv2d at the edges of its geometry: wide padding, a 1 x 1 image, a kernel wider than the "
          "image, strides past the kernel, dilation, one-sided windows, odd groups") {
  struct Edge {
    Shape x, w;
    Pair stride, padding, dilation;
    std::int64_t groups;
  };
  const Edge edges[] = {
      {{2, 16, 5, 5}, {32, 16, 3, 3}, {1, 1}, {3, 3}, {1, 1}, 1},    // padding wider than the kernel
      {{2, 64, 1, 1}, {128, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},   // a 1 x 1 image
      {{2, 16, 4, 4}, {32, 16, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1},    // a kernel wider than the image
      {{2, 16, 17, 17}, {32, 16, 2, 2}, {4, 4}, {0, 0}, {1, 1}, 1},  // strides past the kernel
      {{2, 16, 11, 11}, {32, 16, 3, 3}, {1, 1}, {0, 0}, {3, 3}, 1},  // dilation 3
      {{2, 16, 12, 9}, {32, 16, 3, 1}, {2, 1}, {1, 0}, {1, 1}, 1},   // a 3 x 1 window, per-axis settings
      {{2, 18, 10, 10}, {27, 6, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 3},   // 3 groups of 9 output channels
  };
  NDManager m = NDManager::new_base_manager("onednn-conv-edges");
  set_random_seed(11);
  const std::uint64_t before = ops::cpu::onednn_convolutions();
  for (const Edge& edge : edges) {
    CAPTURE(edge.w[2]);
    CAPTURE(edge.padding[0]);
    NDArray x = m.random_uniform(edge.x), w = m.random_uniform(edge.w, -0.5, 0.5), b = m.random_uniform({edge.w[0]});
    const std::vector<float> got =
        conv2d(x, w, b, edge.stride, edge.padding, edge.dilation, edge.groups).to_vector<float>();
    const std::vector<double> want = conv2d(x.to_type(DataType::float64), w.to_type(DataType::float64),
                                            b.to_type(DataType::float64), edge.stride, edge.padding, edge.dilation,
                                            edge.groups)
                                         .to_vector<double>();
    REQUIRE(got.size() == want.size());
    int wrong = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      if (!(got[i] == doctest::Approx(want[i]).epsilon(1e-5).scale(4.0))) ++wrong;
    CHECK(wrong == 0);
  }
  MESSAGE("oneDNN served " << ops::cpu::onednn_convolutions() - before << " of the 14 image convolutions");
}

}  // namespace ndgc
