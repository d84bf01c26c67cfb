// dropout: zero each element with probability p, scale the rest by 1 / (1 - p).
//
// Note [Dropout masks from the stream]
// The mask is never stored. A call reserves size() positions of
// set_random_seed's counter-based stream (ops/random.hpp) and element i is
// kept when unit(seed, offset + i) >= p; the tape keeps (p, seed, offset),
// and the backward pass runs the same kernel on the gradient, which redraws
// exactly the forward's mask. A step thus allocates no mask array, and a
// seed gives the same masks on every device and thread count.
#include <cmath>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ops/layer_support.hpp"
#include "ops/random.hpp"
#include "ops/record.hpp"

namespace ndgc {

using namespace ndgc::ops;

NDArray dropout(const NDArray& x, double p, bool training, Site site) {
  detail::enter();
  const char* op = "dropout";
  Pinned px(x, op);
  check_floating(op, *px);
  if (!(p >= 0 && p < 1))
    throw InvalidArgument(fmt::format("{}: p = {} is outside [0, 1); it is the probability of zeroing an element "
                                      "of {}",
                                      op, p, describe(*px)));
  if (!training || p == 0) return x;
  check_layer_kernels(op, px->device);
  auto out = new_output(px->shape, px->dtype, px->device, site, op);
  const RandomDraw draw = reserve_random(std::uint64_t(out->size()), px->device);
  if (out->size() > 0) engine(px->device).dropout(view_of(*px), p, draw, view_of(*out));
  NDArray result = publish_like(std::move(out), *px, op);
  record({.kind = OpKind::dropout, .scalar = p}, draw, {x}, result);
  return result;
}

}  // namespace ndgc
