// softmax, log_softmax and one_hot.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/ndarray.hpp"
#include "ops/op_support.hpp"
#include "ops/record.hpp"

namespace ndgc {
namespace {

using namespace ndgc::ops;

NDArray softmax_impl(const NDArray& x, int axis, bool log, Site site) {
  detail::enter();
  const char* op = log ? "log_softmax" : "softmax";
  Pinned a(x, op);
  check_floating(op, *a);
  if (a->shape.rank() == 0) throw InvalidArgument(fmt::format("{}: {} is a scalar; it has no axis", op, describe(*a)));
  const int ax = normalize_axis(op, axis, a->shape.rank(), *a);
  auto out = new_output(a->shape, a->dtype, a->device, site, op);
  if (out->size() > 0) engine(a->device).softmax(view_of(*a), ax, log, view_of(*out));
  NDArray result = publish_like(std::move(out), *a, op);
  record({.kind = log ? OpKind::log_softmax : OpKind::softmax, .axis = ax}, {x}, result);
  return result;
}

}  // namespace

NDArray NDArray::softmax(int axis, Site site) const { return softmax_impl(*this, axis, false, site); }
NDArray NDArray::log_softmax(int axis, Site site) const { return softmax_impl(*this, axis, true, site); }

NDArray NDArray::one_hot(std::int64_t depth, DataType dtype, Site site) const {
  detail::enter();
  Pinned a(*this, "one_hot");
  if (is_floating(a->dtype) || a->dtype == DataType::boolean)
    throw DTypeMismatch(fmt::format("one_hot: {} must hold integer class indices", describe(*a)));
  if (depth <= 0) throw InvalidArgument(fmt::format("one_hot: depth {} must be positive", depth));
  check_rank_room("one_hot", *a);
  Shape shape = a->shape;
  shape.push_back(depth);
  auto out = new_output(shape, dtype, a->device, site, "one_hot");
  engine(a->device).one_hot(view_of(*a), depth, view_of(*out));
  return publish_like(std::move(out), *a, "one_hot");
}

}  // namespace ndgc
