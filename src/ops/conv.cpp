// conv2d: NCHW convolution through the engine's own convolution where it
// has one (the CPU's: oneDNN's, Note [Convolutions through oneDNN] in
// ops/cpu/onednn_conv.cpp), else through im2col and one GEMM per group.
//
// Note [Convolution as GEMM]
// im2col writes the input's patches into a scratch matrix col [N, G, K, L]
// (K = C/G · kH · kW taps, L = H' · W' output positions), which is exactly
// [N, C · kH · kW, L] in memory. The weight [O, C/G, kH, kW] is [G, O/G, K]
// in memory; seen with stride 0 over N it multiplies every image's columns
// in one batched matmul whose output [N, G, O/G, L] is the result
// [N, O, H', W'] in memory, so nothing is copied back. The images go
// through in chunks of Engine::im2col_images: the whole batch on a GPU (one
// launch each), on the CPU as many as the threads' caches hold, so the
// columns are read back from the cache and the scratch is a chunk, not a
// batch (7.2 MB → 0.45 MB per thread for the second convolution of
// `ndgc-train --model cnn`). Each image's columns and product are computed
// alone, so the chunking never changes a result. The scratch is a private
// array from the device's allocator (a step's workspace serves it when one
// is open), freed when the op returns. The backward pass
// (autograd/layer_rules.cpp) recomputes col, chunk by chunk, rather than
// keeping it alive between the passes: memory per recorded conv stays at
// its inputs.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ops/layer_support.hpp"
#include "ops/autocast.hpp"
#include "ops/record.hpp"

namespace ndgc {

using namespace ndgc::ops;

NDArray conv2d(const NDArray& x, const NDArray& weight, const NDArray& bias, Pair stride, Pair padding,
               Pair dilation, std::int64_t groups, Site site) {
  if (autocast::lowers({&x, &weight, &bias}))
    return ndgc::conv2d(autocast::lower(x, x, site), autocast::lower(weight, x, site), autocast::lower(bias, x, site), stride,
                  padding, dilation, groups, site);
  detail::enter();
  const char* op = "conv2d";
  Pinned px(x, op), pw(weight, op);
  std::optional<Pinned> pb;
  if (bias.defined()) pb.emplace(bias, op);
  check_floating(op, *px);
  check_same_dtype(op, *px, *pw);
  check_same_device(op, *px, *pw);
  if (pb) {
    check_same_dtype(op, *px, **pb);
    check_same_device(op, *px, **pb);
  }
  check_rank(op, "x", *px, 4, "[N, C, H, W]");
  check_rank(op, "weight", *pw, 4, "[O, C / groups, kH, kW]");
  check_pair(op, "stride", stride, 1);
  check_pair(op, "dilation", dilation, 1);
  check_pair(op, "padding", padding, 0);
  const std::int64_t n = px->shape[0], c = px->shape[1], o = pw->shape[0];
  if (groups < 1) throw InvalidArgument(fmt::format("{}: groups {} must be at least 1", op, groups));
  if (c % groups != 0 || o % groups != 0)
    throw InvalidArgument(fmt::format("{}: groups {} must divide the {} input channels of x {} and the {} output "
                                      "channels of weight {}",
                                      op, groups, c, describe(*px), o, describe(*pw)));
  if (pw->shape[1] * groups != c)
    throw ShapeMismatch(fmt::format("{}: x {} has {} channels, but weight {} expects {} per group x {} groups = {}",
                                    op, describe(*px), c, describe(*pw), pw->shape[1], groups,
                                    pw->shape[1] * groups));
  if (pb && !((*pb)->shape == Shape{o}))
    throw ShapeMismatch(fmt::format("{}: bias {} must be [{}], one per output channel of weight {}", op,
                                    describe(**pb), o, describe(*pw)));
  Window2d w;
  for (int a = 0; a < 2; ++a) {
    w.kernel[a] = pw->shape[2 + a];
    w.stride[a] = stride[std::size_t(a)];
    w.padding[a] = padding[std::size_t(a)];
    w.dilation[a] = dilation[std::size_t(a)];
  }
  w.groups = groups;
  const Pair hw = window_output(op, *px, w);
  check_layer_kernels(op, px->device);

  auto out = new_output(Shape{n, o, hw[0], hw[1]}, px->dtype, px->device, site, op);
  const std::int64_t k = pw->shape[1] * w.kernel[0] * w.kernel[1], l = hw[0] * hw[1];
  if (out->size() > 0) {
    Engine& e = engine(px->device);
    std::unique_ptr<ArrayImpl> wkeep;
    TensorView wv = contiguous_of(*pw, wkeep, op);
    const TensorView xv = view_of(*px);
    // A contiguous bias is added by the engine's own convolution, where it has one.
    std::optional<TensorView> dense_bias;
    if (pb && view_of(**pb).is_contiguous()) dense_bias = view_of(**pb);
    const bool direct = e.conv2d_direct(xv, wv, dense_bias ? &*dense_bias : nullptr, w, view_of(*out));
    if (!direct) {
      const std::int64_t chunk = e.im2col_images(n, groups * k * l * std::int64_t(size_of(px->dtype)));
      auto col = new_output(Shape{chunk, groups, k, l}, px->dtype, px->device, site, op);
      wv.rank = 4;  // [G, O/G, K] in memory, stride 0 over N
      const std::int64_t shape[4] = {n, groups, o / groups, k}, strides[4] = {0, (o / groups) * k, k, 1};
      for (int i = 0; i < 4; ++i) wv.shape[i] = shape[i], wv.strides[i] = strides[i];
      const TensorView yv = contiguous_view(out->data(), out->dtype, Shape{n, groups, o / groups, l});
      Engine::for_each_chunk(n, chunk, [&](std::int64_t first, std::int64_t count) {
        const TensorView cv = view_of(*col).narrow(0, 0, count);
        e.im2col(xv.narrow(0, first, count), w, cv);
        e.matmul(wv.narrow(0, first, count), cv, yv.narrow(0, first, count));
      });
    }
    if (pb && !(direct && dense_bias)) {
      const TensorView ov = view_of(*out);
      TensorView bv = view_of(**pb);
      bv.rank = 4;
      const std::int64_t bstrides[4] = {0, bv.strides[0], 0, 0};
      for (int i = 0; i < 4; ++i) bv.shape[i] = ov.shape[i], bv.strides[i] = bstrides[i];
      e.binary(Binary::add, ov, bv, ov);
    }
  }
  NDArray result = publish_like(std::move(out), *px, op);
  if (pb) record({.kind = OpKind::conv2d}, w, {x, weight, bias}, result);
  else record({.kind = OpKind::conv2d}, w, {x, weight}, result);
  return result;
}

}  // namespace ndgc
