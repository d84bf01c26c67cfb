// Validation and scratch helpers of the layer ops. See layer_support.hpp.
#include "ops/layer_support.hpp"

#include <fmt/format.h>

#include "ndgc/error.hpp"

namespace ndgc::ops {

void check_layer_kernels(const char* op, Device device) {
  if (!engine(device).has_layer_kernels())
    throw InvalidArgument(fmt::format("{}: not available on {} yet", op, device.to_string()));
}

void check_rank(const char* op, const char* what, const ArrayImpl& a, int rank, const char* layout) {
  if (a.shape.rank() != rank)
    throw ShapeMismatch(fmt::format("{}: {} {} has rank {}, but must be {} (rank {})", op, what, describe(a),
                                    a.shape.rank(), layout, rank));
}

void check_pair(const char* op, const char* what, Pair p, std::int64_t least) {
  if (p[0] < least || p[1] < least)
    throw InvalidArgument(fmt::format("{}: {} ({}, {}) must be at least {} in both axes", op, what, p[0], p[1], least));
}

Pair window_output(const char* op, const ArrayImpl& x, const Window2d& w) {
  Pair out{};
  for (int a = 0; a < 2; ++a) {
    const std::int64_t in = x.shape[2 + a], padded = in + 2 * w.padding[a];
    const std::int64_t span = w.dilation[a] * (w.kernel[a] - 1) + 1;
    if (span > padded)
      throw InvalidArgument(fmt::format(
          "{}: the kernel {}x{} (dilated: {} along the {}) is larger than the padded input of x {}: {} + 2 x {} = {}",
          op, w.kernel[0], w.kernel[1], span, a ? "width" : "height", describe(x), in, w.padding[a], padded));
    out[std::size_t(a)] = conv::out_size(in, w.kernel[a], w.stride[a], w.padding[a], w.dilation[a]);
  }
  return out;
}

TensorView contiguous_of(const ArrayImpl& a, std::unique_ptr<ArrayImpl>& keep, const char* op) {
  const TensorView v = view_of(a);
  if (v.is_contiguous()) return v;
  keep = new_output(a.shape, a.dtype, a.device, Site::current(), op);
  const TensorView c = view_of(*keep);
  if (c.size() > 0) engine(a.device).copy(v, c);
  return c;
}

}  // namespace ndgc::ops
