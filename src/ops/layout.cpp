// Copies and joins: dup, contiguous, to_type, concat, stack.
#include <optional>

#include <boost/container/small_vector.hpp>
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/ndarray.hpp"
#include "ndgc/ndlist.hpp"
#include "ops/op_support.hpp"
#include "ops/record.hpp"

namespace ndgc {
namespace {

using namespace ndgc::ops;

// A contiguous copy of `x` as `dtype` (nullopt: x's own dtype).
NDArray copy_as(const NDArray& x, std::optional<DataType> dtype, Site site, const char* op, const OpRecord& rec) {
  detail::enter();
  Pinned a(x, op);
  auto out = new_output(a->shape, dtype.value_or(a->dtype), a->device, site, op);
  engine(a->device).copy(view_of(*a), view_of(*out));
  NDArray result = publish_like(std::move(out), *a, op);
  record(rec, {x}, result);
  return result;
}

// concat and stack: `stack` inserts a new axis of length 1 into every input first.
NDArray join(const NDList& list, int axis, bool stack, Site site) {
  detail::enter();
  const char* op = stack ? "stack" : "concat";
  if (list.empty()) throw InvalidArgument(fmt::format("{}: the list of arrays is empty", op));
  // Inline for the short lists a step stacks (an LSTM's layers): no heap allocation.
  boost::container::small_vector<Pinned, 4> pins;
  pins.reserve(list.size());
  for (const NDArray& x : list) pins.emplace_back(x, op);
  const ArrayImpl& first = *pins.front();
  const int in_rank = first.shape.rank();
  if (stack) check_rank_room(op, first);
  const int rank = in_rank + (stack ? 1 : 0);
  if (rank == 0) throw InvalidArgument(fmt::format("{}: scalars cannot be concatenated; stack them", op));
  const int ax = normalize_axis(op, axis, rank, first);
  Shape out_shape = first.shape;
  if (stack) out_shape.insert(ax, 0);
  out_shape[ax] = 0;
  for (const Pinned& p : pins) {
    check_same_device(op, first, *p);
    check_same_dtype(op, first, *p);
    bool match = p->shape.rank() == in_rank;
    for (int i = 0; match && i < in_rank; ++i)
      match = stack ? p->shape[i] == first.shape[i] : (i == ax || p->shape[i] == first.shape[i]);
    if (!match)
      throw ShapeMismatch(fmt::format("{}: {} does not match {} {}", op, describe(*p), describe(first),
                                      stack ? "(stack needs equal shapes)" : "on the axes other than the join axis"));
    out_shape[ax] += stack ? 1 : p->shape[ax];
  }
  auto out = new_output(out_shape, first.dtype, first.device, site, op);
  Engine& e = engine(first.device);
  TensorView dst = view_of(*out);
  std::int64_t at = 0;
  for (const Pinned& p : pins) {
    const TensorView part = dst.narrow(ax, at, stack ? 1 : p->shape[ax]);
    TensorView src = view_of(*p);
    if (stack) {  // the new axis, of length 1
      for (int i = src.rank; i > ax; --i) {
        src.shape[i] = src.shape[i - 1];
        src.strides[i] = src.strides[i - 1];
      }
      src.shape[ax] = 1;
      src.strides[ax] = 0;
      ++src.rank;
    }
    e.copy(src, part);
    at += part.shape[ax];
  }
  NDArray result = publish_like(std::move(out), first, op);
  record({.kind = stack ? OpKind::stack : OpKind::concat, .axis = ax}, list.arrays(), result);
  return result;
}

}  // namespace

NDArray NDArray::dup(Site site) const {
  return copy_as(*this, std::nullopt, site, "dup", {.kind = OpKind::copy});
}

NDArray NDArray::contiguous(Site site) const {
  detail::enter();
  Pinned a(*this, "contiguous");
  if (a->is_contiguous()) return *this;
  return copy_as(*this, a->dtype, site, "contiguous", {.kind = OpKind::copy});
}

NDArray NDArray::to_type(DataType dtype, Site site) const {
  return copy_as(*this, dtype, site, "to_type", {.kind = OpKind::to_type, .dtype = dtype});
}

NDArray NDArray::concat(const NDArray& other, int axis, Site site) const {
  return join(NDList{*this, other}, axis, false, site);
}

NDArray concat(const NDList& arrays, int axis, Site site) { return join(arrays, axis, false, site); }
NDArray stack(const NDList& arrays, int axis, Site site) { return join(arrays, axis, true, site); }

}  // namespace ndgc
