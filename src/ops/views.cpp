// Views: reshape, transpose/permute, squeeze, expand_dims, broadcast_to, get.
//
// Each result is a new array in the input's manager that shares its storage
// (the buffer is freed when the last view closes). reshape is the exception
// when the layout forbids a view: then it copies, as PyTorch's reshape does.
#include <algorithm>
#include <numeric>
#include <span>

#include <fmt/format.h>

#include "core/publish.hpp"
#include "ndgc/error.hpp"
#include "ndgc/manager.hpp"
#include "ndgc/ndarray.hpp"
#include "ops/op_support.hpp"
#include "ops/record.hpp"

namespace ndgc {
namespace {

using namespace ndgc::ops;

Shape resolve_reshape(const char* op, const Shape& target, const ArrayImpl& a) {
  Shape out = target, known_dims = target;
  int infer = -1;
  for (int i = 0; i < out.rank(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) throw InvalidArgument(fmt::format("{}: {} has more than one -1", op, target.to_string()));
      infer = i;
      known_dims[i] = 1;
    } else if (out[i] < 0) {
      throw InvalidArgument(fmt::format("{}: {} has a negative dimension", op, target.to_string()));
    }
  }
  const std::int64_t known = checked_size(op, known_dims, a.dtype);  // See Note [Huge shapes]
  if (infer >= 0 && known != 0 && a.size() % known == 0) out[infer] = a.size() / known;
  if (out.size() != a.size() || (infer >= 0 && known == 0))
    throw ShapeMismatch(fmt::format("{}: cannot reshape {} ({} elements) to {}", op, describe(a), a.size(),
                                    target.to_string()));
  return out;
}

NDArray reshape_impl(const NDArray& x, const Shape& target, Site site, const char* op) {
  detail::enter();
  Pinned a(x, op);
  Shape shape = resolve_reshape(op, target, *a);
  NDArray result;
  if (a->is_contiguous()) {
    result = publish_view(*a, shape, detail::contiguous_strides(shape), a->offset, site, op);
  } else {
    auto out = new_output(shape, a->dtype, a->device, site, op);
    engine(a->device).copy(view_of(*a), contiguous_view(out->data(), a->dtype, a->shape));
    result = publish_like(std::move(out), *a, op);
  }
  record({.kind = OpKind::reshape}, {x}, result);
  return result;
}

// A view with the same storage and offset but new shape/strides, recorded as a reshape.
NDArray restride(const NDArray& x, const Pinned& a, const Shape& shape, const Shape& strides, Site site,
                 const char* op) {
  NDArray result = publish_view(*a, shape, strides, a->offset, site, op);
  record({.kind = OpKind::reshape}, {x}, result);
  return result;
}

// permute's body for every name it goes by (permute, transpose, swap_axes), so
// that errors name the call the user wrote.
NDArray permute_pinned(const NDArray& x, const Pinned& a, std::span<const int> axes, Site site, const char* op) {
  const int rank = a->shape.rank();
  if (int(axes.size()) != rank)
    throw InvalidArgument(fmt::format("{}: {} axes given for {} of rank {}", op, axes.size(), describe(*a), rank));
  Permutation perm{.rank = rank};
  std::uint32_t seen = 0;
  Shape shape, strides;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const int axis = normalize_axis(op, axes[i], rank, *a);
    if (seen >> axis & 1)
      throw InvalidArgument(fmt::format("{}: axis {} appears twice for {}", op, axes[i], describe(*a)));
    seen |= 1u << axis;
    perm.axes[i] = std::int8_t(axis);
    shape.push_back(a->shape[axis]);
    strides.push_back(a->strides[axis]);
  }
  NDArray result = publish_view(*a, shape, strides, a->offset, site, op);
  record({.kind = OpKind::permute}, perm, {x}, result);
  return result;
}

}  // namespace

NDArray NDArray::reshape(const Shape& shape, Site site) const { return reshape_impl(*this, shape, site, "reshape"); }

NDArray NDArray::flatten(Site site) const { return reshape_impl(*this, Shape{-1}, site, "flatten"); }

NDArray NDArray::permute(const std::vector<int>& axes, Site site) const {
  detail::enter();
  Pinned a(*this, "permute");
  return permute_pinned(*this, a, axes, site, "permute");
}

NDArray NDArray::transpose(const std::vector<int>& axes, Site site) const {
  detail::enter();
  Pinned a(*this, "transpose");
  return permute_pinned(*this, a, axes, site, "transpose");
}

NDArray NDArray::transpose(Site site) const {
  detail::enter();
  Pinned a(*this, "transpose");
  std::vector<int> axes(static_cast<std::size_t>(a->shape.rank()));
  std::iota(axes.rbegin(), axes.rend(), 0);
  return permute_pinned(*this, a, axes, site, "transpose");
}

NDArray NDArray::swap_axes(int first, int second, Site site) const {
  detail::enter();
  Pinned a(*this, "swap_axes");
  const int r = a->shape.rank();
  int axes[kMaxRank];
  std::iota(axes, axes + r, 0);
  int i = first < 0 ? first + r : first, j = second < 0 ? second + r : second;
  if (i < 0 || i >= r || j < 0 || j >= r)
    throw InvalidArgument(fmt::format("swap_axes: axes {} and {} are out of range for {} (rank {})", first, second,
                                      describe(*a), r));
  std::swap(axes[i], axes[j]);
  return permute_pinned(*this, a, std::span<const int>(axes, std::size_t(r)), site, "swap_axes");
}

NDArray NDArray::squeeze(Site site) const {
  detail::enter();
  Pinned a(*this, "squeeze");
  Shape shape, strides;
  for (int i = 0; i < a->shape.rank(); ++i)
    if (a->shape[i] != 1) {
      shape.push_back(a->shape[i]);
      strides.push_back(a->strides[i]);
    }
  return restride(*this, a, shape, strides, site, "squeeze");
}

NDArray NDArray::squeeze(const std::vector<int>& axes, Site site) const {
  if (axes.empty()) return squeeze(site);  // no axes named: every axis of length 1, as squeeze() (not "every axis")
  detail::enter();
  Pinned a(*this, "squeeze");
  std::uint32_t mask = axes_mask("squeeze", axes, *a);
  Shape shape, strides;
  for (int i = 0; i < a->shape.rank(); ++i) {
    if (mask >> i & 1) {
      if (a->shape[i] != 1)
        throw InvalidArgument(fmt::format("squeeze: axis {} of {} has length {}, not 1", i, describe(*a), a->shape[i]));
      continue;
    }
    shape.push_back(a->shape[i]);
    strides.push_back(a->strides[i]);
  }
  return restride(*this, a, shape, strides, site, "squeeze");
}

NDArray NDArray::expand_dims(int axis, Site site) const {
  detail::enter();
  Pinned a(*this, "expand_dims");
  check_rank_room("expand_dims", *a);
  const int rank = a->shape.rank();
  int ax = normalize_axis("expand_dims", axis, rank + 1, *a);
  Shape shape = a->shape, strides = a->strides;
  std::int64_t stride = ax < rank ? a->shape[ax] * a->strides[ax] : 1;
  shape.insert(ax, 1);
  strides.insert(ax, stride);
  return restride(*this, a, shape, strides, site, "expand_dims");
}

NDArray NDArray::broadcast_to(const Shape& shape, Site site) const {
  detail::enter();
  Pinned a(*this, "broadcast_to");
  checked_size("broadcast_to", shape, a->dtype);  // a view, but its size() must not overflow: Note [Huge shapes]
  if (!broadcastable(a->shape, shape))
    throw ShapeMismatch(fmt::format("broadcast_to: {} does not broadcast to {}", describe(*a), shape.to_string()));
  TensorView v = broadcast_view(*a, shape);
  Shape strides(std::span<const std::int64_t>(v.strides, std::size_t(v.rank)));
  NDArray result = publish_view(*a, shape, strides, a->offset, site, "broadcast_to");
  record({.kind = OpKind::broadcast_to}, {*this}, result);
  return result;
}

namespace {

// NDArray::get: the view joins `into`, or the array's own manager when null.
NDArray index_view(const NDArray& self, detail::ManagerImpl* into, const NDIndex& index, Site site) {
  Pinned a(self, "get");
  using Kind = NDIndex::Item::Kind;
  const auto& items = index.items();
  int consumed = 0, ellipses = 0;
  for (const auto& it : items) {
    if (it.kind == Kind::ellipsis) ++ellipses;
    else ++consumed;
  }
  const int rank = a->shape.rank();
  if (ellipses > 1) throw InvalidArgument(fmt::format("get: more than one '...' in the index of {}", describe(*a)));
  if (consumed > rank)
    throw InvalidArgument(fmt::format("get: {} indices for {} of rank {}", consumed, describe(*a), rank));
  Shape shape, strides;
  std::int64_t offset = a->offset;
  int axis = 0;
  auto keep_axis = [&](int ax) {
    shape.push_back(a->shape[ax]);
    strides.push_back(a->strides[ax]);
  };
  for (const auto& it : items) {
    if (it.kind == Kind::ellipsis) {
      for (int n = rank - consumed; n > 0; --n) keep_axis(axis++);
      continue;
    }
    const std::int64_t len = a->shape[axis];
    if (it.kind == Kind::all) {
      keep_axis(axis);
    } else if (it.kind == Kind::index) {
      std::int64_t i = it.index < 0 ? it.index + len : it.index;
      if (i < 0 || i >= len)
        throw InvalidArgument(fmt::format("get: index {} is out of range for axis {} (length {}) of {}", it.index,
                                          axis, len, describe(*a)));
      offset += i * a->strides[axis];
    } else {
      if (it.step <= 0)
        throw InvalidArgument(fmt::format("get: slice step {} on axis {} of {} must be positive", it.step, axis,
                                          describe(*a)));
      auto clamp = [&](std::optional<std::int64_t> v, std::int64_t fallback) {
        if (!v) return fallback;
        std::int64_t x = *v < 0 ? *v + len : *v;
        return std::clamp<std::int64_t>(x, 0, len);
      };
      std::int64_t start = clamp(it.start, 0), stop = clamp(it.stop, len);
      std::int64_t count = stop > start ? (stop - start + it.step - 1) / it.step : 0;
      offset += (count > 0 ? start : 0) * a->strides[axis];
      shape.push_back(count);
      strides.push_back(a->strides[axis] * it.step);
    }
    ++axis;
  }
  while (axis < rank) keep_axis(axis++);
  NDArray result =
      into ? detail::publish(std::make_unique<ArrayImpl>(shape, strides, offset, a->dtype, a->storage, site), *into,
                             detail::Join::create, "get")
           : publish_view(*a, shape, strides, offset, site, "get");
  record({.kind = OpKind::get}, index, {self}, result);
  return result;
}

}  // namespace

NDArray NDArray::get(const NDIndex& index, Site site) const {
  detail::enter();
  return index_view(*this, nullptr, index, site);
}

NDArray NDArray::get(const ManagerRef& manager, const NDIndex& index, Site site) const {
  detail::enter();
  if (!manager.defined())
    throw InvalidArgument("get: the ManagerRef is empty (default-constructed or moved-from)");
  manager.impl()->check_open("get");  // before the array, as a factory checks its manager
  return index_view(*this, manager.impl(), index, site);
}

}  // namespace ndgc
