// What every op does before and after its kernel: validate, describe, shape,
// build the output and publish it into its first input's manager.
//
// Error messages name the op, the arrays (name or UUID, shape, dtype,
// manager) and what to do (docs/design.md §8). The output of an op is built
// privately and published only after its kernel ran (core/publish.hpp), so a
// failing op leaves nothing behind.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/array_impl.hpp"
#include "core/manager_impl.hpp"
#include "core/reclaim_queue.hpp"
#include "core/registry.hpp"
#include "ndgc/ndarray.hpp"
#include "ops/engine.hpp"

namespace ndgc::ops {

using detail::ArrayImpl;
using detail::Pinned;

TensorView view_of(const ArrayImpl& a) noexcept;
// `a` seen with shape `to` (a's shape must broadcast to it): stride 0 on new and stretched axes.
TensorView broadcast_view(const ArrayImpl& a, const Shape& to) noexcept;
// A contiguous view as a row-major rows × cols matrix (cols 0: a column).
inline TensorView as_rows(TensorView v, std::int64_t rows, std::int64_t cols) noexcept {
  v.rank = cols > 0 ? 2 : 1;
  v.shape[0] = rows, v.strides[0] = cols > 0 ? cols : 1;
  if (cols > 0) v.shape[1] = cols, v.strides[1] = 1;
  return v;
}

// "'w' (3f2a..., (2, 3), float32, manager system/app)"
std::string describe(const ArrayImpl& a);

// NumPy broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<Shape> broadcast_shape(const Shape& x, const Shape& y) noexcept;
// The same for two arrays; ShapeMismatch naming both otherwise.
Shape broadcast_shapes(const char* op, const ArrayImpl& a, const ArrayImpl& b);
bool broadcastable(const Shape& from, const Shape& to) noexcept;
void check_same_dtype(const char* op, const ArrayImpl& a, const ArrayImpl& b);
void check_same_device(const char* op, const ArrayImpl& a, const ArrayImpl& b);
// Rejects boolean (and, for float-only ops, integer) inputs with DTypeMismatch.
void check_numeric(const char* op, const ArrayImpl& a);
void check_floating(const char* op, const ArrayImpl& a);
// A writable destination: no axis of length > 1 with stride 0.
void check_writable(const char* op, const ArrayImpl& a);
// For ops that add an axis (expand_dims, stack, one_hot): `a` must have fewer than kMaxRank.
void check_rank_room(const char* op, const ArrayImpl& a);

// Axis in [-rank, rank) → [0, rank); InvalidArgument naming the array otherwise.
int normalize_axis(const char* op, int axis, int rank, const ArrayImpl& a);
// Axes → bit mask (empty list: every axis); duplicates are InvalidArgument.
std::uint32_t axes_mask(const char* op, const std::vector<int>& axes, const ArrayImpl& a);

// The element count of `shape`; InvalidArgument naming `op` for a negative
// dimension, or for more elements of `dtype` than an address space holds
// (where Shape::size() and the byte count would overflow). See Note [Huge shapes].
std::int64_t checked_size(const char* op, const Shape& shape, DataType dtype);
// A new contiguous array on `device`, not yet visible to anyone. `op` names the
// caller in the error for a shape checked_size rejects.
std::unique_ptr<ArrayImpl> new_output(const Shape& shape, DataType dtype, Device device, Site site,
                                      const char* op = "new array");
// Publishes `out` into the manager of `first` (the op's first array input).
NDArray publish_like(std::unique_ptr<ArrayImpl> out, const ArrayImpl& first, const char* op);
// A view of `base` published into base's manager.
NDArray publish_view(const ArrayImpl& base, const Shape& shape, const Shape& strides, std::int64_t offset,
                     Site site, const char* op);

}  // namespace ndgc::ops
