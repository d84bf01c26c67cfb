// The NDGC_HD window maths of src/ops/conv_math.hpp, run on the host as the
// CUDA kernels would run it.
#include <doctest/doctest.h>

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

}  // namespace ndgc::ops
