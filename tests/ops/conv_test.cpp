// conv2d (src/ops/conv.cpp): values by hand and against a direct loop over
// the definition, every parameter, views and float32; a batch in chunks of
// images, forward and backward; each error path.
#include "ops/cpu/cpu_engine.hpp"
#include "ops_test_util.hpp"
#include "test_util.hpp"

namespace ops_test {
namespace {

struct ConvCase {
  Shape x, w;
  Pair stride{1, 1}, padding{0, 0}, dilation{1, 1};
  std::int64_t groups = 1;
  bool bias = true;
};

// out[n, o, y, x] = b[o] + Σ_{c in o's group, ky, kx} x[n, c, y s - p + ky d, x s - p + kx d] w[o, c', ky, kx].
std::vector<double> ref_conv(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                             const ConvCase& k, Shape& out) {
  const std::int64_t n = k.x[0], c = k.x[1], h = k.x[2], wd = k.x[3], o = k.w[0], cg = k.w[1], kh = k.w[2],
                     kw = k.w[3];
  const std::int64_t oh = (h + 2 * k.padding[0] - k.dilation[0] * (kh - 1) - 1) / k.stride[0] + 1;
  const std::int64_t ow = (wd + 2 * k.padding[1] - k.dilation[1] * (kw - 1) - 1) / k.stride[1] + 1;
  out = Shape{n, o, oh, ow};
  std::vector<double> r(std::size_t(out.size()));
  const std::int64_t og = o / k.groups;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t oc = 0; oc < o; ++oc)
      for (std::int64_t y = 0; y < oh; ++y)
        for (std::int64_t z = 0; z < ow; ++z) {
          double s = b.empty() ? 0 : b[std::size_t(oc)];
          for (std::int64_t cc = 0; cc < cg; ++cc)
            for (std::int64_t ky = 0; ky < kh; ++ky)
              for (std::int64_t kx = 0; kx < kw; ++kx) {
                const std::int64_t iy = y * k.stride[0] - k.padding[0] + ky * k.dilation[0];
                const std::int64_t ix = z * k.stride[1] - k.padding[1] + kx * k.dilation[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                const std::int64_t ch = oc / og * cg + cc;
                s += x[std::size_t(((i * c + ch) * h + iy) * wd + ix)] * w[std::size_t(((oc * cg + cc) * kh + ky) * kw + kx)];
              }
          r[std::size_t(((i * o + oc) * oh + y) * ow + z)] = s;
        }
  return r;
}

std::vector<double> ramp(std::int64_t n, double scale, double shift) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = std::sin(double(i) * scale + shift);
  return v;
}

}  // namespace

TEST_CASE("conv2d: a 3x3 image and a 2x2 kernel of ones, by hand") {
  NDManager m = fresh();
  NDArray x = m.create(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  NDArray w = m.ones({1, 1, 2, 2}, DataType::float64);
  NDArray y = conv2d(x, w, NDArray{});
  check_shape(y, {1, 1, 2, 2});
  check_values(y, {12, 16, 24, 28});
  // padding 1, bias 0.5: the corners see one pixel each
  NDArray b = m.create(std::vector<double>{0.5}, {1});
  NDArray p = conv2d(x, w, b, {1, 1}, {1, 1});
  check_shape(p, {1, 1, 4, 4});
  check_values(p, {1.5, 3.5, 5.5, 3.5, 5.5, 12.5, 16.5, 9.5, 11.5, 24.5, 28.5, 15.5, 7.5, 15.5, 17.5, 9.5});
  // stride 2 over padding 1: corners only
  check_values(conv2d(x, w, b, {2, 2}, {1, 1}), {1.5, 5.5, 11.5, 28.5});
  // dilation 2 over a 3x3 kernel span: x[0,0] + x[0,2] + x[2,0] + x[2,2]
  check_values(conv2d(x, w, NDArray{}, {1, 1}, {0, 0}, {2, 2}), {1 + 3 + 7 + 9});
}

TEST_CASE("conv2d: against the definition (stride, padding, dilation, groups, uneven shapes)") {
  const std::vector<ConvCase> cases = {
      {{2, 3, 5, 4}, {4, 3, 3, 2}},
      {{1, 2, 7, 6}, {3, 2, 3, 3}, {2, 1}, {1, 2}, {1, 1}, 1, false},
      {{2, 4, 6, 7}, {6, 2, 2, 3}, {1, 2}, {0, 1}, {2, 1}, 2},
      {{1, 6, 5, 5}, {6, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 6},
      {{3, 2, 4, 9}, {2, 2, 1, 1}, {3, 2}, {0, 0}, {1, 1}, 1},
  };
  NDManager m = fresh();
  for (const ConvCase& k : cases) {
    CAPTURE(k.x.to_string());
    CAPTURE(k.w.to_string());
    const auto xv = ramp(k.x.size(), 0.7, 0.1), wv = ramp(k.w.size(), 1.3, 0.4);
    const auto bv = k.bias ? ramp(k.w[0], 2.1, 0.3) : std::vector<double>{};
    Shape out;
    const auto want = ref_conv(xv, wv, bv, k, out);
    for (DataType dt : {DataType::float64, DataType::float32}) {
      NDArray x = m.create(xv, k.x).to_type(dt), w = m.create(wv, k.w).to_type(dt);
      NDArray b = k.bias ? m.create(bv, {k.w[0]}).to_type(dt) : NDArray{};
      NDArray y = conv2d(x, w, b, k.stride, k.padding, k.dilation, k.groups);
      CHECK(y.dtype() == dt);
      check_shape(y, out);
      check_values(y, want, dt == DataType::float32 ? 1e-5 : 1e-12);
    }
  }
}

TEST_CASE("conv2d: views as inputs") {
  NDManager m = fresh();
  const ConvCase k{{2, 3, 4, 5}, {2, 3, 2, 2}, {1, 1}, {1, 0}};
  const auto xv = ramp(k.x.size(), 0.3, 0.2), wv = ramp(k.w.size(), 0.9, 0.5), bv = ramp(2, 1.0, 0.0);
  Shape out;
  const auto want = ref_conv(xv, wv, bv, k, out);
  // x stored as [N, C, W, H] and transposed; the weight as [kW, kH, C, O] permuted; the bias a strided slice.
  NDArray xs = m.create(xv, k.x).transpose({0, 1, 3, 2}).contiguous().transpose({0, 1, 3, 2});
  NDArray ws = m.create(wv, k.w).transpose({3, 2, 1, 0}).contiguous().transpose({3, 2, 1, 0});
  NDArray bs = m.create(std::vector<double>{bv[0], 9, bv[1], 9}, {4}).get("::2");
  CHECK_FALSE(xs.is_contiguous());
  CHECK_FALSE(ws.is_contiguous());
  check_values(conv2d(xs, ws, bs, k.stride, k.padding), want, 1e-12);
}

TEST_CASE("conv2d: each image of a batch gets the bits it gets alone, at 1 and 2 threads, on a strided batch axis") {
  NDManager m = fresh();
  // Every other image of a larger batch, so the batch axis is strided.
  const ConvCase k{{6, 8, 32, 32}, {16, 8, 3, 3}, {1, 1}, {1, 1}};
  const auto xv = ramp(2 * k.x.size(), 0.01, 0.3), wv = ramp(k.w.size(), 0.02, 0.1), bv = ramp(16, 0.1, 0.0);
  NDArray all = m.create(std::vector<float>(xv.begin(), xv.end()), Shape{12, 8, 32, 32});
  NDArray x = all.get("::2");
  NDArray w = m.create(std::vector<float>(wv.begin(), wv.end()), k.w);
  NDArray b = m.create(std::vector<float>(bv.begin(), bv.end()), Shape{16});
  for (int threads : {1, 2}) {
    test::Threads t(threads);
    NDArray y = conv2d(x, w, b, k.stride, k.padding);
    for (std::int64_t i = 0; i < 6; ++i) {
      CAPTURE(i);
      const NDIndex image = NDIndex().add_slice(i, i + 1);
      CHECK(bits(y.get(image).contiguous()) == bits(conv2d(x.get(image), w, b, k.stride, k.padding)));
    }
    auto doubles = [](const NDArray& a) {
      const std::vector<float> f = a.contiguous().to_vector<float>();
      return std::vector<double>(f.begin(), f.end());
    };
    Shape out;
    check_values(y, ref_conv(doubles(x), doubles(w), doubles(b), k, out), 1e-3);
  }
}

TEST_CASE("conv2d: the CPU engine takes as many images' columns at a time as its threads' caches hold") {
  const ops::cpu::CpuEngine e;
  test::Threads t(1);
  CHECK(e.im2col_images(32, 225 << 10) == 2);  // 512 KiB a thread
  CHECK(e.im2col_images(32, 28 << 10) == 18);
  CHECK(e.im2col_images(5, 1) == 5);          // never more than the batch
  CHECK(e.im2col_images(5, 1 << 30) == 1);    // never fewer than one image
  CHECK(e.im2col_images(0, 1 << 10) == 1);
  test::Threads two(2);
  CHECK(e.im2col_images(32, 225 << 10) == 4);
}

TEST_CASE("conv2d: gradients of a batch in chunks of images are each image's own, and their sum for the weight") {
  // 4 x 3 x 3 taps x 24 x 24 positions of float64: 166 KB of columns per
  // image, so 3 images a chunk at 1 thread (chunks of 3 and 2), all 5 at 2.
  NDManager m = fresh();
  const auto xv = ramp(5 * 4 * 24 * 24, 0.01, 0.3), wv = ramp(6 * 4 * 3 * 3, 0.02, 0.1);
  NDArray x = m.create(xv, Shape{5, 4, 24, 24}), w = m.create(wv, Shape{6, 4, 3, 3});
  NDArray up = m.create(ramp(5 * 6 * 24 * 24, 0.003, -0.4), Shape{5, 6, 24, 24});
  // dx and dW of sum(conv2d(x, w) * up), for x as given
  auto grads = [&](const NDArray& xs, const NDArray& ups) {
    NDArray xl = xs.dup(), wl = w.dup();
    xl.set_requires_gradient(true);
    wl.set_requires_gradient(true);
    {
      GradientCollector collector;
      collector.backward(conv2d(xl, wl, NDArray{}, {1, 1}, {1, 1}).mul(ups).sum());
    }
    return std::pair{xl.gradient(), wl.gradient()};
  };
  for (int threads : {1, 2}) {
    test::Threads t(threads);
    CAPTURE(threads);
    const auto [dx, dw] = grads(x, up);
    std::vector<double> dw_sum(std::size_t(w.size()), 0.0);
    for (std::int64_t i = 0; i < 5; ++i) {
      CAPTURE(i);
      const NDIndex image = NDIndex().add_slice(i, i + 1);
      const auto [dxi, dwi] = grads(x.get(image), up.get(image));
      CHECK(bits(dx.get(image).contiguous()) == bits(dxi));
      const std::vector<double> d = dwi.to_vector<double>();
      for (std::size_t j = 0; j < d.size(); ++j) dw_sum[j] += d[j];
    }
    check_values(dw, dw_sum, 1e-12);
  }
}

TEST_CASE("conv2d: makes one array, and a failed call none") {
  NDManager m = fresh();
  NDArray x = m.ones({1, 2, 4, 4}), w = m.ones({3, 2, 3, 3}), b = m.zeros({3});
  const std::size_t before = m.array_count();
  NDArray y = conv2d(x, w, b);
  CHECK(m.array_count() == before + 1);
  CHECK_THROWS_AS(conv2d(x, m.ones({3, 1, 3, 3}), b), ShapeMismatch);
  CHECK(m.array_count() == before + 2);  // the weight made for the call
}

TEST_CASE("conv2d: errors name what is wrong") {
  NDManager m = fresh();
  NDArray x = m.ones({1, 4, 5, 5}), w = m.ones({2, 4, 3, 3});
  CHECK_THROWS_WITH_AS(conv2d(m.ones({4, 5, 5}), w, NDArray{}), doctest::Contains("has rank 3, but must be [N, C, H, W]"),
                       ShapeMismatch);
  CHECK_THROWS_WITH_AS(conv2d(x, m.ones({2, 4, 3}), NDArray{}), doctest::Contains("weight"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(conv2d(x, m.ones({2, 3, 3, 3}), NDArray{}),
                       doctest::Contains("has 4 channels, but weight"), ShapeMismatch);
  CHECK_THROWS_WITH_AS(conv2d(x, m.ones({2, 1, 3, 3}), NDArray{}, {1, 1}, {0, 0}, {1, 1}, 3),
                       doctest::Contains("groups 3 must divide the 4 input channels"), InvalidArgument);
  CHECK_THROWS_WITH_AS(conv2d(x, m.ones({3, 2, 3, 3}), NDArray{}, {1, 1}, {0, 0}, {1, 1}, 2),
                       doctest::Contains("and the 3 output channels"), InvalidArgument);
  CHECK_THROWS_WITH_AS(conv2d(x, w, NDArray{}, {1, 1}, {0, 0}, {1, 1}, 0), doctest::Contains("groups 0"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(conv2d(x, w, NDArray{}, {0, 1}), doctest::Contains("stride (0, 1) must be at least 1"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(conv2d(x, w, NDArray{}, {1, 1}, {0, 0}, {1, 0}),
                       doctest::Contains("dilation (1, 0) must be at least 1"), InvalidArgument);
  CHECK_THROWS_WITH_AS(conv2d(x, w, NDArray{}, {1, 1}, {-1, 0}), doctest::Contains("padding (-1, 0)"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(conv2d(x, m.ones({2, 4, 6, 3}), NDArray{}),
                       doctest::Contains("is larger than the padded input"), InvalidArgument);
  CHECK_THROWS_WITH_AS(conv2d(x, w, NDArray{}, {1, 1}, {0, 0}, {3, 1}),
                       doctest::Contains("dilated: 7 along the height"), InvalidArgument);
  CHECK_THROWS_WITH_AS(conv2d(x, w, m.zeros({3})), doctest::Contains("one per output channel"), ShapeMismatch);
  CHECK_THROWS_AS(conv2d(x, m.ones({2, 4, 3, 3}, DataType::float64), NDArray{}), DTypeMismatch);
  CHECK_THROWS_AS(conv2d(m.ones({1, 4, 5, 5}, DataType::int32), m.ones({2, 4, 3, 3}, DataType::int32), NDArray{}),
                  DTypeMismatch);
  const std::size_t before = m.array_count();
  CHECK_THROWS_AS(conv2d(x, w, NDArray{}, {0, 0}), InvalidArgument);
  CHECK(m.array_count() == before);
}

}  // namespace ops_test
