// Shared op plumbing: views for kernels, validation with messages that name
// the arrays, output creation and publication. See op_support.hpp.
#include "ops/op_support.hpp"

#include <fmt/format.h>

#include "core/publish.hpp"
#include "ndgc/error.hpp"
#include "ops/record.hpp"

namespace ndgc::ops {

std::atomic<Recorder> g_recorder{nullptr};
void set_recorder(Recorder recorder) noexcept { g_recorder.store(recorder, std::memory_order_release); }

TensorView view_of(const ArrayImpl& a) noexcept {
  TensorView v;
  v.data = a.data();
  v.dtype = a.dtype;
  v.rank = a.shape.rank();
  for (int i = 0; i < v.rank; ++i) {
    v.shape[i] = a.shape[i];
    v.strides[i] = a.strides[i];
  }
  return v;
}

TensorView broadcast_view(const ArrayImpl& a, const Shape& to) noexcept {
  TensorView v;
  v.data = a.data();
  v.dtype = a.dtype;
  v.rank = to.rank();
  const int shift = to.rank() - a.shape.rank();
  for (int i = 0; i < v.rank; ++i) {
    v.shape[i] = to[i];
    int j = i - shift;
    v.strides[i] = (j < 0 || a.shape[j] != to[i]) ? 0 : a.strides[j];
  }
  return v;
}

std::string describe(const ArrayImpl& a) {
  detail::ManagerHold owner(a.acquire_owner());
  std::string n = a.get_name();
  return fmt::format("{}{} ({}, {}, {}{})", n.empty() ? "" : "'" + n + "' ", a.uuid.to_string(),
                     a.shape.to_string(), to_string(a.dtype), owner.get() ? "manager " + owner->path() : "no manager",
                     a.device.is_cpu() ? "" : ", " + a.device.to_string());
}

bool broadcastable(const Shape& from, const Shape& to) noexcept {
  if (from.rank() > to.rank()) return false;
  const int shift = to.rank() - from.rank();
  for (int i = 0; i < from.rank(); ++i)
    if (from[i] != 1 && from[i] != to[i + shift]) return false;
  return true;
}

std::optional<Shape> broadcast_shape(const Shape& x, const Shape& y) noexcept {
  const int rank = std::max(x.rank(), y.rank());
  Shape out;
  for (int i = 0; i < rank; ++i) {
    int xi = i - (rank - x.rank()), yi = i - (rank - y.rank());
    std::int64_t dx = xi < 0 ? 1 : x[xi], dy = yi < 0 ? 1 : y[yi];
    if (dx != dy && dx != 1 && dy != 1) return std::nullopt;
    out.push_back(dx == 1 ? dy : dx);
  }
  return out;
}

Shape broadcast_shapes(const char* op, const ArrayImpl& a, const ArrayImpl& b) {
  if (std::optional<Shape> s = broadcast_shape(a.shape, b.shape)) return *s;
  throw ShapeMismatch(fmt::format(
      "{}: shapes {} and {} do not broadcast: arrays {} and {}. Reshape or expand_dims one of them so that "
      "each axis, counted from the end, matches or is 1",
      op, a.shape.to_string(), b.shape.to_string(), describe(a), describe(b)));
}

void check_same_dtype(const char* op, const ArrayImpl& a, const ArrayImpl& b) {
  if (a.dtype != b.dtype)
    throw DTypeMismatch(fmt::format("{}: dtypes differ: {} is {} and {} is {}; convert one with to_type()", op,
                                    describe(a), to_string(a.dtype), describe(b), to_string(b.dtype)));
}

void check_same_device(const char* op, const ArrayImpl& a, const ArrayImpl& b) {
  if (a.device != b.device)
    throw DeviceMismatch(fmt::format("{}: {} is on {} but {} is on {}; move one of them first", op, describe(a),
                                     a.device.to_string(), describe(b), b.device.to_string()));
}

void check_numeric(const char* op, const ArrayImpl& a) {
  if (a.dtype == DataType::boolean)
    throw DTypeMismatch(fmt::format("{}: {} is boolean, which has no arithmetic; convert it with to_type()", op,
                                    describe(a)));
}

void check_floating(const char* op, const ArrayImpl& a) {
  if (!is_floating(a.dtype))
    throw DTypeMismatch(fmt::format("{}: {} is {}, but {} needs a floating dtype (float32, float64, float16, bfloat16); convert it with to_type()",
                                    op, describe(a), to_string(a.dtype), op));
}

void check_writable(const char* op, const ArrayImpl& a) {
  for (int i = 0; i < a.shape.rank(); ++i)
    if (a.strides[i] == 0 && a.shape[i] > 1)
      throw InvalidArgument(fmt::format(
          "{}: {} is a broadcast view (several elements share one memory location) and cannot be written in "
          "place; dup() it first",
          op, describe(a)));
}

void check_rank_room(const char* op, const ArrayImpl& a) {
  if (a.shape.rank() >= kMaxRank)
    throw InvalidArgument(fmt::format("{}: {} already has {} axes, the most an array can have; {} adds one", op,
                                      describe(a), kMaxRank, op));
}

int normalize_axis(const char* op, int axis, int rank, const ArrayImpl& a) {
  int ax = axis < 0 ? axis + rank : axis;
  if (ax < 0 || ax >= rank)
    throw InvalidArgument(fmt::format("{}: axis {} is out of range for {} (rank {})", op, axis, describe(a), rank));
  return ax;
}

std::uint32_t axes_mask(const char* op, const std::vector<int>& axes, const ArrayImpl& a) {
  const int rank = a.shape.rank();
  if (axes.empty()) return rank == 0 ? 0 : (std::uint32_t(1) << rank) - 1;
  std::uint32_t mask = 0;
  for (int axis : axes) {
    std::uint32_t bit = std::uint32_t(1) << normalize_axis(op, axis, rank, a);
    if (mask & bit)
      throw InvalidArgument(fmt::format("{}: axis {} is listed twice for {}", op, axis, describe(a)));
    mask |= bit;
  }
  return mask;
}

// Note [Huge shapes]
// Shape::size() multiplies the dimensions in int64 and the allocator is asked
// for size() * size_of(dtype) bytes in size_t: a shape such as (2^62,) of
// float64, or a broadcast of (2^32, 1) against (1, 2^32), overflows one or the
// other, and the kernel then writes far past a tiny buffer. Every op output
// and every view whose shape comes from the user is checked here first; no
// real buffer comes near 2^62 bytes.
std::int64_t checked_size(const char* op, const Shape& shape, DataType dtype) {
  constexpr std::int64_t kMaxBytes = std::int64_t(1) << 62;
  bool empty = false;
  for (std::int64_t d : shape) {
    if (d < 0) throw InvalidArgument(fmt::format("{}: shape {} has a negative dimension", op, shape.to_string()));
    empty = empty || d == 0;
  }
  if (empty) return 0;
  const std::int64_t limit = kMaxBytes / std::int64_t(size_of(dtype));
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (n > limit / d)
      throw InvalidArgument(fmt::format("{}: shape {} of {} has more elements than memory can hold (2^62 bytes)",
                                        op, shape.to_string(), to_string(dtype)));
    n *= d;
  }
  return n;
}

std::unique_ptr<ArrayImpl> new_output(const Shape& shape, DataType dtype, Device device, Site site, const char* op) {
  checked_size(op, shape, dtype);
  return ArrayImpl::make(shape, dtype, device, site);
}

NDArray publish_like(std::unique_ptr<ArrayImpl> out, const ArrayImpl& first, const char* op) {
  detail::ManagerHold owner(first.acquire_owner());
  return detail::publish(std::move(out), *owner.get(), detail::Join::create, op);
}

NDArray publish_view(const ArrayImpl& base, const Shape& shape, const Shape& strides, std::int64_t offset,
                     Site site, const char* op) {
  auto view = std::make_unique<ArrayImpl>(shape, strides, offset, base.dtype, base.storage, site);
  return publish_like(std::move(view), base, op);
}

}  // namespace ndgc::ops
