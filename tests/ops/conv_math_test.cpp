// The NDGC_HD window maths of src/ops/conv_math.hpp, run on the host as the
// CUDA kernels would run it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/conv_math.hpp"

namespace ndgc::ops {

TEST_CASE("conv_math: output sizes") {
  CHECK(conv::out_size(5, 3, 1, 0, 1) == 3);
  CHECK(conv::out_size(5, 3, 2, 1, 1) == 3);
  CHECK(conv::out_size(7, 3, 1, 0, 3) == 1);
  CHECK(conv::out_size(2, 3, 1, 0, 1) == 0);  // the kernel does not fit
  CHECK(conv::out_size(2, 3, 1, 1, 1) == 2);
}

TEST_CASE("conv_math: col2im is the adjoint of im2col, and any cut of the rows gives the same columns") {
  Window2d w;
  w.kernel[0] = 2, w.kernel[1] = 3, w.stride[0] = 2, w.padding[1] = 1, w.dilation[0] = 2;
  const std::int64_t c = 2, h = 6, wd = 5;
  const std::int64_t oh = conv::out_size(h, 2, 2, 0, 2), ow = conv::out_size(wd, 3, 1, 1, 1);
  const std::int64_t rows = c * 6, cols = oh * ow;
  std::vector<double> x(std::size_t(c * h * wd)), col(std::size_t(rows * cols)), col2(col.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = double(i % 7) - 2.5;
  conv::im2col_rows(x.data(), h * wd, wd, 1, h, wd, w, oh, ow, col.data(), 0, rows);
  for (std::int64_t r = 0; r < rows; ++r) conv::im2col_rows(x.data(), h * wd, wd, 1, h, wd, w, oh, ow, col2.data(), r, r + 1);
  CHECK(col == col2);
  // <im2col(x), y> == <x, col2im(y)> for any y
  std::vector<double> y(col.size()), back(x.size());
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = double(i % 5) * 0.5 - 1;
  conv::col2im_channels(y.data(), h, wd, w, oh, ow, back.data(), 0, c);
  double lhs = 0, rhs = 0;
  for (std::size_t i = 0; i < y.size(); ++i) lhs += col[i] * y[i];
  for (std::size_t i = 0; i < x.size(); ++i) rhs += x[i] * back[i];
  CHECK(lhs == doctest::Approx(rhs).epsilon(1e-12));
}

TEST_CASE("conv_math: the padding never holds a window's maximum; the first maximum wins") {
  Window2d w;
  w.kernel[0] = w.kernel[1] = 2, w.stride[0] = w.stride[1] = 2, w.padding[0] = w.padding[1] = 1;
  const double x[4] = {-5, -1, -1, -7};  // 2x2
  CHECK(conv::max_position(x, 2, 1, 2, 2, w, 0, 0) == 0);
  CHECK(conv::max_position(x, 2, 1, 2, 2, w, 0, 1) == 1);
  Window2d all;
  all.kernel[0] = all.kernel[1] = 2;
  CHECK(conv::max_position(x, 2, 1, 2, 2, all, 0, 0) == 1);  // a tie: the first
  CHECK(conv::window_sum(x, 2, 1, 2, 2, w, 1, 1) == -7);
}

TEST_CASE("conv_math: an unpadded window's inner_max_offset and inner_window_sum are max_position's and window_sum's") {
  // A 5x6 plane stored with row stride 8 (a view), values with ties and NaNs.
  const std::int64_t h = 5, wd = 6, sh = 8;
  std::vector<double> x(std::size_t(h * sh), 99);
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t z = 0; z < wd; ++z) x[std::size_t(y * sh + z)] = double((y * 7 + z * 3) % 5);
  x[std::size_t(2 * sh + 3)] = std::nan("");
  x[std::size_t(4 * sh + 1)] = std::nan("");
  x[std::size_t(4 * sh + 2)] = std::nan("");
  int checked = 0;
  for (std::int64_t ky : {1, 2, 3})
    for (std::int64_t dy : {1, 2})
      for (std::int64_t sy : {1, 2}) {
        Window2d w;
        w.kernel[0] = ky, w.kernel[1] = 4 - ky, w.dilation[0] = dy, w.dilation[1] = 3 - dy, w.stride[0] = sy,
        w.stride[1] = 3 - sy;
        const std::int64_t oh = conv::out_size(h, w.kernel[0], w.stride[0], 0, w.dilation[0]);
        const std::int64_t ow = conv::out_size(wd, w.kernel[1], w.stride[1], 0, w.dilation[1]);
        for (std::int64_t oy = 0; oy < oh; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            CAPTURE(ky);
            CAPTURE(dy);
            CAPTURE(sy);
            CAPTURE(oy);
            CAPTURE(ox);
            const std::int64_t start = oy * w.stride[0] * sh + ox * w.stride[1];
            const std::int64_t at = conv::max_position(x.data(), sh, 1, h, wd, w, oy, ox);
            CHECK(start + conv::inner_max_offset(x.data() + start, sh, 1, w) == at / wd * sh + at % wd);
            const double want = conv::window_sum(x.data(), sh, 1, h, wd, w, oy, ox);
            const double got = conv::inner_window_sum(x.data() + start, sh, 1, w);
            CHECK(std::memcmp(&got, &want, sizeof got) == 0);
            ++checked;
          }
      }
  CHECK(checked == 98);  // every window of the 12 shapes was compared
}

namespace {

// Windows that overlap, skip, pad and dilate.
std::vector<Window2d> windows() {
  std::vector<Window2d> all;
  for (int v = 0; v < 4; ++v) {
    Window2d w;
    w.kernel[0] = 2 + v % 2, w.kernel[1] = 3 - v % 2;
    w.stride[0] = 1 + v / 2, w.stride[1] = 1 + v % 3;
    w.padding[0] = v % 2, w.padding[1] = 1;
    w.dilation[0] = 1 + v % 2, w.dilation[1] = 1 + v / 3;
    all.push_back(w);
  }
  return all;
}

// Values with ties and sign changes, never exactly summable in any order.
double value(std::size_t i) { return double(i % 7) * 0.3 - 0.7 + double(i % 3) * 1e-9; }

}  // namespace

TEST_CASE("conv_math: im2col_entry is the entry im2col_rows writes, for a strided x") {
  for (const Window2d& w : windows()) {
    const std::int64_t c = 2, h = 6, wd = 5;
    const std::int64_t oh = conv::out_size(h, w.kernel[0], w.stride[0], w.padding[0], w.dilation[0]);
    const std::int64_t ow = conv::out_size(wd, w.kernel[1], w.stride[1], w.padding[1], w.dilation[1]);
    const std::int64_t rows = c * w.kernel[0] * w.kernel[1];
    std::vector<double> x(std::size_t(c * h * wd * 2)), col(std::size_t(rows * oh * ow));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = value(i);
    // x as [C, H, W] with its columns two elements apart.
    conv::im2col_rows(x.data(), 2 * h * wd, 2 * wd, 2, h, wd, w, oh, ow, col.data(), 0, rows);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t oy = 0; oy < oh; ++oy)
        for (std::int64_t ox = 0; ox < ow; ++ox)
          CHECK(conv::im2col_entry(x.data(), 2 * h * wd, 2 * wd, 2, h, wd, w, r, oy, ox) ==
                col[std::size_t((r * oh + oy) * ow + ox)]);
  }
}

TEST_CASE("conv_math: col2im_pixel gathers the same bits col2im_channels scatters") {
  for (const Window2d& w : windows()) {
    const std::int64_t c = 3, h = 7, wd = 6;
    const std::int64_t oh = conv::out_size(h, w.kernel[0], w.stride[0], w.padding[0], w.dilation[0]);
    const std::int64_t ow = conv::out_size(wd, w.kernel[1], w.stride[1], w.padding[1], w.dilation[1]);
    std::vector<float> col(std::size_t(c * w.kernel[0] * w.kernel[1] * oh * ow)), dx(std::size_t(c * h * wd));
    for (std::size_t i = 0; i < col.size(); ++i) col[i] = float(value(i));
    conv::col2im_channels(col.data(), h, wd, w, oh, ow, dx.data(), 0, c);
    for (std::int64_t ch = 0; ch < c; ++ch)
      for (std::int64_t iy = 0; iy < h; ++iy)
        for (std::int64_t ix = 0; ix < wd; ++ix)
          CHECK(conv::col2im_pixel(col.data(), w, oh, ow, ch, iy, ix) == dx[std::size_t((ch * h + iy) * wd + ix)]);
  }
}

TEST_CASE("conv_math: pool_gradient_pixel gathers the same bits as the CPU's scatter, ties and padding included") {
  for (bool max : {true, false}) {
    for (const Window2d& base : windows()) {
      Window2d w = base;  // pools: no dilation, padding at most half the kernel
      w.dilation[0] = w.dilation[1] = 1;
      w.padding[0] = std::min(w.padding[0], w.kernel[0] / 2), w.padding[1] = std::min(w.padding[1], w.kernel[1] / 2);
      const std::int64_t h = 7, wd = 6;
      const std::int64_t oh = conv::out_size(h, w.kernel[0], w.stride[0], w.padding[0], 1);
      const std::int64_t ow = conv::out_size(wd, w.kernel[1], w.stride[1], w.padding[1], 1);
      std::vector<float> x(std::size_t(h * wd)), g(std::size_t(oh * ow * 3)), scattered(x.size(), 0.0f);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 4);  // many ties
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = float(value(i));
      const float taps = float(w.kernel[0] * w.kernel[1]);
      for (std::int64_t oy = 0; oy < oh; ++oy)  // the CPU's loop (ops/cpu/conv_kernels.cpp), g strided by 3
        for (std::int64_t ox = 0; ox < ow; ++ox) {
          const float gv = g[std::size_t(3 * (oy * ow + ox))];
          if (max) {
            scattered[std::size_t(conv::max_position(x.data(), wd, 1, h, wd, w, oy, ox))] += gv;
            continue;
          }
          for (std::int64_t ky = 0; ky < w.kernel[0]; ++ky)
            for (std::int64_t kx = 0; kx < w.kernel[1]; ++kx) {
              const std::int64_t iy = conv::source(w, 0, oy, ky), ix = conv::source(w, 1, ox, kx);
              if (iy >= 0 && iy < h && ix >= 0 && ix < wd) scattered[std::size_t(iy * wd + ix)] += gv / taps;
            }
        }
      for (std::int64_t iy = 0; iy < h; ++iy)
        for (std::int64_t ix = 0; ix < wd; ++ix) {
          INFO("max " << max << " pixel (" << iy << ", " << ix << ")");
          CHECK(conv::pool_gradient_pixel(max, x.data(), wd, 1, h, wd, g.data(), 3 * ow, 3, oh, ow, w, iy, ix) ==
                scattered[std::size_t(iy * wd + ix)]);
        }
    }
  }
}

TEST_CASE("conv_math: output_of inverts source") {
  Window2d w;
  w.kernel[0] = 3, w.stride[0] = 2, w.padding[0] = 1, w.dilation[0] = 2;
  for (std::int64_t o = 0; o < 4; ++o)
    for (std::int64_t k = 0; k < 3; ++k) {
      const std::int64_t i = conv::source(w, 0, o, k);
      std::int64_t back = -1;
      CHECK(conv::output_of(w, 0, i, k, 4, back));
      CHECK(back == o);
      CHECK_FALSE(conv::output_of(w, 0, i, k, o, back));  // o outside [0, o)
      CHECK_FALSE(conv::output_of(w, 0, i + 1, k, 4, back));  // off the stride's grid
    }
}

TEST_CASE("conv_math: inside_run is the run of outputs whose tap reads inside the axis") {
  int cases = 0;
  for (std::int64_t size : {1, 2, 5, 9})
    for (std::int64_t kernel : {1, 2, 3, 5})
      for (std::int64_t stride : {1, 2, 3})
        for (std::int64_t padding : {0, 1, 2, 4})
          for (std::int64_t dilation : {1, 2}) {
            Window2d w;
            w.kernel[1] = kernel, w.stride[1] = stride, w.padding[1] = padding, w.dilation[1] = dilation;
            const std::int64_t o_size = conv::out_size(size, kernel, stride, padding, dilation);
            for (std::int64_t k = 0; k < kernel; ++k) {
              std::int64_t lo = -1, hi = -1;
              conv::inside_run(w, 1, k, size, o_size, lo, hi);
              INFO("size " << size << " kernel " << kernel << " stride " << stride << " padding " << padding
                            << " dilation " << dilation << " tap " << k);
              REQUIRE(0 <= lo);
              REQUIRE(lo <= hi);
              REQUIRE(hi <= o_size);
              for (std::int64_t o = 0; o < o_size; ++o) {
                const std::int64_t i = conv::source(w, 1, o, k);
                CHECK((lo <= o && o < hi) == (0 <= i && i < size));
              }
              ++cases;
            }
          }
  CHECK(cases == 4 * (1 + 2 + 3 + 5) * 3 * 4 * 2);
}

}  // namespace ndgc::ops
