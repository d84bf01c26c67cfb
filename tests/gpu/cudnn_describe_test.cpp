// Tests the host-side half of gpu/cudnn_conv.cpp, which needs no GPU:
// cuDNN's descriptors of a convolution (the real library), and its output
// shape against ndgc's window arithmetic over a sweep of geometries, H and W
// given different values so that a swapped argument shows; and the views it
// must refuse (so that conv2d takes im2col for them). Runs everywhere gpu/
// is built; the convolutions themselves run in cudnn_conv_test.cpp, on a GPU.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "cudnn_conv.hpp"
#include "ops/conv_math.hpp"
#include "ops/engine.hpp"

using namespace ndgc;
using ops::TensorView;
using ops::Window2d;

namespace {

alignas(64) float g_buffer[1 << 16];  // the views' data: never read, only described

TensorView view4(const Shape& shape, DataType dtype = DataType::float32, std::int64_t offset = 0) {
  return ops::contiguous_view(g_buffer + offset, dtype, shape);
}

Window2d window(std::int64_t kh, std::int64_t kw, std::int64_t sh, std::int64_t sw, std::int64_t ph, std::int64_t pw,
                std::int64_t dh, std::int64_t dw, std::int64_t groups = 1) {
  Window2d w;
  w.kernel[0] = kh, w.kernel[1] = kw, w.stride[0] = sh, w.stride[1] = sw;
  w.padding[0] = ph, w.padding[1] = pw, w.dilation[0] = dh, w.dilation[1] = dw, w.groups = groups;
  return w;
}

// y's shape by ndgc's arithmetic (ops/conv_math.hpp).
Shape output(const Shape& x, const Shape& weight, const Window2d& w) {
  return Shape{x[0], weight[0], ops::conv::out_size(x[2], w.kernel[0], w.stride[0], w.padding[0], w.dilation[0]),
               ops::conv::out_size(x[3], w.kernel[1], w.stride[1], w.padding[1], w.dilation[1])};
}

}  // namespace

TEST_CASE("the cuDNN loaded is cuDNN 9, the major version gpu/ was built against") {
  MESSAGE("cuDNN " << cuda::cudnn_version());
  CHECK(cuda::cudnn_version() >= 90000);
  CHECK(cuda::cudnn_version() < 100000);
}

TEST_CASE("cuDNN's descriptors agree with ndgc's window arithmetic over a sweep of geometries") {
  int described = 0;
  for (std::int64_t kh : {1, 3})
    for (std::int64_t kw : {2, 5})
      for (std::int64_t sh : {1, 2})
        for (std::int64_t sw : {1, 3})
          for (std::int64_t ph : {0, 1})
            for (std::int64_t pw : {0, 2})
              for (std::int64_t dh : {1, 2})
                for (std::int64_t dw : {1, 3}) {
                  const Window2d w = window(kh, kw, sh, sw, ph, pw, dh, dw);
                  const Shape xs{2, 3, 11, 14}, ws{4, 3, kh, kw}, ys = output(xs, ws, w);
                  if (ys[2] < 1 || ys[3] < 1) continue;
                  INFO("kernel " << kh << "x" << kw << " stride " << sh << "," << sw << " padding " << ph << ","
                                 << pw << " dilation " << dh << "," << dw);
                  CHECK(cuda::cudnn_describes(view4(xs), view4(ws), w, view4(ys)));
                  // One row more or less than ndgc's is refused: the shapes must be cuDNN's.
                  CHECK_FALSE(cuda::cudnn_describes(view4(xs), view4(ws), w, view4({ys[0], ys[1], ys[2] + 1, ys[3]})));
                  CHECK_FALSE(cuda::cudnn_describes(view4(xs), view4(ws), w, view4({ys[0], ys[1], ys[2], ys[3] - 1})));
                  ++described;
                }
  CHECK(described > 200);
}

TEST_CASE("cuDNN's descriptors take groups, every floating dtype and a strided x") {
  const Window2d grouped = window(3, 3, 1, 1, 1, 1, 1, 1, 4);
  CHECK(cuda::cudnn_describes(view4({2, 8, 9, 9}), view4({8, 2, 3, 3}), grouped, view4({2, 8, 9, 9})));
  const Window2d depthwise = window(3, 3, 2, 2, 1, 1, 1, 1, 8);
  CHECK(cuda::cudnn_describes(view4({2, 8, 9, 9}), view4({8, 1, 3, 3}), depthwise, view4({2, 8, 5, 5})));
  const Window2d plain = window(3, 3, 1, 1, 1, 1, 1, 1);
  for (DataType t : {DataType::float32, DataType::float64, DataType::float16, DataType::bfloat16}) {
    INFO(to_string(t));
    CHECK(cuda::cudnn_describes(view4({2, 3, 8, 8}, t), view4({4, 3, 3, 3}, t), plain, view4({2, 4, 8, 8}, t)));
  }
  TensorView columns_two_apart = view4({2, 3, 8, 8});  // x.get(":, :, :, ::2") of [2, 3, 8, 16]
  const std::int64_t strides[4] = {3 * 8 * 16, 8 * 16, 16, 2};
  for (int i = 0; i < 4; ++i) columns_two_apart.strides[i] = strides[i];
  CHECK(cuda::cudnn_describes(columns_two_apart, view4({4, 3, 3, 3}), plain, view4({2, 4, 8, 8})));
}

TEST_CASE("views cuDNN cannot take are refused, so conv2d goes through im2col for them") {
  const Window2d plain = window(3, 3, 1, 1, 1, 1, 1, 1);
  const Shape xs{2, 3, 8, 8}, ws{4, 3, 3, 3}, ys{2, 4, 8, 8};
  SUBCASE("a pointer not 16-byte aligned") {
    CHECK_FALSE(cuda::cudnn_describes(view4(xs, DataType::float32, 1), view4(ws), plain, view4(ys)));
  }
  SUBCASE("integers, or mixed dtypes") {
    CHECK_FALSE(cuda::cudnn_describes(view4(xs, DataType::int32), view4(ws, DataType::int32), plain,
                                      view4(ys, DataType::int32)));
    CHECK_FALSE(cuda::cudnn_describes(view4(xs), view4(ws, DataType::bfloat16), plain, view4(ys)));
  }
  SUBCASE("a broadcast axis (stride 0) or a reversed one") {
    TensorView x = view4(xs);
    x.strides[1] = 0;
    CHECK_FALSE(cuda::cudnn_describes(x, view4(ws), plain, view4(ys)));
    x = view4(xs);
    x.strides[3] = -1;
    CHECK_FALSE(cuda::cudnn_describes(x, view4(ws), plain, view4(ys)));
  }
  SUBCASE("a weight or an output that is not contiguous") {
    TensorView w = view4(ws);
    std::swap(w.strides[2], w.strides[3]);
    CHECK_FALSE(cuda::cudnn_describes(view4(xs), w, plain, view4(ys)));
  }
  SUBCASE("sizes past cuDNN's 32-bit limits") {
    CHECK_FALSE(cuda::cudnn_describes(view4({std::int64_t(1) << 31, 1, 1, 1}), view4({1, 1, 1, 1}),
                                      window(1, 1, 1, 1, 0, 0, 1, 1), view4({std::int64_t(1) << 31, 1, 1, 1})));
  }
  CHECK(cuda::cudnn_unavailable().empty());  // refusing views turns nothing off
}
