// max_pool2d and avg_pool2d over NCHW (PyTorch's arithmetic, floor mode).
//
// max: the padding never wins (it is -inf), the first maximum of a window
// takes the gradient. avg: the divisor is always kH·kW, padding counting as
// zeros (count_include_pad). As in PyTorch, the padding may be at most half
// the kernel, so every window holds at least one element of the input. A
// max pool may be dilated (its taps `dilation` apart, as PyTorch's).
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ops/layer_support.hpp"
#include "ops/record.hpp"

namespace ndgc {
namespace {

using namespace ndgc::ops;

NDArray pool2d(bool max, const NDArray& x, Pair kernel, Pair stride, Pair padding, Pair dilation, Site site) {
  detail::enter();
  const char* op = max ? "max_pool2d" : "avg_pool2d";
  Pinned px(x, op);
  check_floating(op, *px);
  check_rank(op, "x", *px, 4, "[N, C, H, W]");
  check_pair(op, "kernel", kernel, 1);
  check_pair(op, "stride", stride, 1);
  check_pair(op, "padding", padding, 0);
  check_pair(op, "dilation", dilation, 1);
  if (padding[0] * 2 > kernel[0] || padding[1] * 2 > kernel[1])
    throw InvalidArgument(fmt::format("{}: padding ({}, {}) must be at most half the kernel ({}, {})", op,
                                      padding[0], padding[1], kernel[0], kernel[1]));
  Window2d w;
  for (std::size_t a = 0; a < 2; ++a) {
    w.kernel[a] = kernel[a];
    w.stride[a] = stride[a];
    w.padding[a] = padding[a];
    w.dilation[a] = dilation[a];
  }
  const Pair hw = window_output(op, *px, w);
  check_layer_kernels(op, px->device);
  auto out = new_output(Shape{px->shape[0], px->shape[1], hw[0], hw[1]}, px->dtype, px->device, site, op);
  if (out->size() > 0) engine(px->device).pool2d(max, view_of(*px), w, view_of(*out));
  NDArray result = publish_like(std::move(out), *px, op);
  record({.kind = max ? OpKind::max_pool2d : OpKind::avg_pool2d}, w, {x}, result);
  return result;
}

}  // namespace

NDArray max_pool2d(const NDArray& x, Pair kernel, Pair stride, Pair padding, Site site) {
  return pool2d(true, x, kernel, stride, padding, {1, 1}, site);
}

NDArray max_pool2d(const NDArray& x, Pair kernel, Pair stride, Pair padding, Pair dilation, Site site) {
  return pool2d(true, x, kernel, stride, padding, dilation, site);
}

NDArray avg_pool2d(const NDArray& x, Pair kernel, Pair stride, Pair padding, Site site) {
  return pool2d(false, x, kernel, stride, padding, {1, 1}, site);
}

}  // namespace ndgc
