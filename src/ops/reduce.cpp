// Reductions: sum, mean, max, min over any axes (keepdims or not), argmax, argmin.
//
// dtype rules: sum of booleans counts them (int64); mean of integers or
// booleans is float32; max/min keep the dtype. max, min, argmax and argmin of
// an empty axis have no answer and throw InvalidArgument.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/ndarray.hpp"
#include "ops/op_support.hpp"
#include "ops/autocast.hpp"
#include "ops/record.hpp"

namespace ndgc {
namespace {

using namespace ndgc::ops;

Shape reduced_shape(const Shape& in, std::uint32_t mask, bool keepdims) {
  Shape out;
  for (int i = 0; i < in.rank(); ++i) {
    if (!(mask >> i & 1)) out.push_back(in[i]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

void check_not_empty(const char* op, const ArrayImpl& a, std::uint32_t mask) {
  for (int i = 0; i < a.shape.rank(); ++i)
    if ((mask >> i & 1) && a.shape[i] == 0)
      throw InvalidArgument(fmt::format("{}: axis {} of {} is empty, so it has no {}", op, i, describe(a), op));
}

NDArray reduce(Reduce op, const NDArray& x, const std::vector<int>* axes, bool keepdims, Site site) {
  if ((op == Reduce::sum || op == Reduce::mean) && autocast::widens({&x}))
    return reduce(op, autocast::widen(x, site), axes, keepdims, site);
  detail::enter();
  const char* name = name_of(op);
  Pinned a(x, name);
  const std::uint32_t mask = axes ? axes_mask(name, *axes, *a) : axes_mask(name, {}, *a);
  const bool extreme = op == Reduce::max || op == Reduce::min;
  if (extreme) check_not_empty(name, *a, mask);
  Engine& e = engine(a->device);

  // Work in a dtype the kernel supports and the result needs.
  DataType work = a->dtype;
  if (op == Reduce::mean && !is_floating(work)) work = DataType::float32;
  else if (work == DataType::boolean) work = op == Reduce::sum ? DataType::int64 : DataType::uint8;
  std::unique_ptr<ArrayImpl> converted;
  TensorView in = view_of(*a);
  if (work != a->dtype) {
    converted = new_output(a->shape, work, a->device, site);
    e.copy(in, view_of(*converted));
    in = view_of(*converted);
  }
  auto out = new_output(reduced_shape(a->shape, mask, true), work, a->device, site);
  e.reduce(op, in, mask, view_of(*out));
  if (extreme && a->dtype == DataType::boolean) {
    auto as_bool = new_output(out->shape, DataType::boolean, a->device, site);
    e.copy(view_of(*out), view_of(*as_bool));
    out = std::move(as_bool);
  }
  // The kernel wrote a contiguous keepdims result; dropping length-1 axes keeps it contiguous.
  out->shape = reduced_shape(a->shape, mask, keepdims);
  out->strides = detail::contiguous_strides(out->shape);
  NDArray result = publish_like(std::move(out), *a, name);
  record({.kind = OpKind::reduce, .reduce = op, .keepdims = keepdims, .axes = mask}, {x}, result);
  return result;
}

NDArray arg_reduce(bool max, const NDArray& x, const int* axis, bool keepdims, Site site) {
  detail::enter();
  const char* name = max ? "argmax" : "argmin";
  Pinned a(x, name);
  check_numeric(name, *a);
  Engine& e = engine(a->device);
  if (!axis) {
    // Of the flattened array: a contiguous 1-D view (copying if needed).
    if (a->size() == 0) throw InvalidArgument(fmt::format("{}: {} is empty", name, describe(*a)));
    std::unique_ptr<ArrayImpl> flat;
    TensorView in = view_of(*a);
    if (!a->is_contiguous()) {
      flat = new_output(a->shape, a->dtype, a->device, site);
      e.copy(in, view_of(*flat));
      in = view_of(*flat);
    }
    in = contiguous_view(in.data, in.dtype, Shape{a->size()});
    auto out = new_output(Shape{1}, DataType::int64, a->device, site);
    e.arg_reduce(max, in, 0, view_of(*out));
    out->shape = Shape{};
    out->strides = Shape{};
    return publish_like(std::move(out), *a, name);
  }
  const int ax = normalize_axis(name, *axis, a->shape.rank(), *a);
  check_not_empty(name, *a, 1u << ax);
  Shape kept = a->shape;
  kept[ax] = 1;
  auto out = new_output(kept, DataType::int64, a->device, site);
  e.arg_reduce(max, view_of(*a), ax, view_of(*out));
  if (!keepdims) {
    out->shape.erase(ax);
    out->strides = detail::contiguous_strides(out->shape);
  }
  return publish_like(std::move(out), *a, name);
}

}  // namespace

NDArray NDArray::sum(Site s) const { return reduce(Reduce::sum, *this, nullptr, false, s); }
NDArray NDArray::sum(const std::vector<int>& axes, bool k, Site s) const { return reduce(Reduce::sum, *this, &axes, k, s); }
NDArray NDArray::mean(Site s) const { return reduce(Reduce::mean, *this, nullptr, false, s); }
NDArray NDArray::mean(const std::vector<int>& axes, bool k, Site s) const { return reduce(Reduce::mean, *this, &axes, k, s); }
NDArray NDArray::max(Site s) const { return reduce(Reduce::max, *this, nullptr, false, s); }
NDArray NDArray::max(const std::vector<int>& axes, bool k, Site s) const { return reduce(Reduce::max, *this, &axes, k, s); }
NDArray NDArray::min(Site s) const { return reduce(Reduce::min, *this, nullptr, false, s); }
NDArray NDArray::min(const std::vector<int>& axes, bool k, Site s) const { return reduce(Reduce::min, *this, &axes, k, s); }
NDArray NDArray::argmax(Site s) const { return arg_reduce(true, *this, nullptr, false, s); }
NDArray NDArray::argmax(int axis, bool k, Site s) const { return arg_reduce(true, *this, &axis, k, s); }
NDArray NDArray::argmin(Site s) const { return arg_reduce(false, *this, nullptr, false, s); }
NDArray NDArray::argmin(int axis, bool k, Site s) const { return arg_reduce(false, *this, &axis, k, s); }

}  // namespace ndgc
