// Factories: arrays made by a manager, on its device, joining it.
#include <cmath>

#include <fmt/format.h>

#include "core/publish.hpp"
#include "ndgc/error.hpp"
#include "ndgc/manager.hpp"
#include "ops/op_support.hpp"
#include "ops/random.hpp"

namespace ndgc {
namespace {

using namespace ndgc::ops;

detail::ManagerImpl& open_manager(detail::ManagerImpl* m, const char* op) {
  if (!m) throw InvalidArgument(fmt::format("{}: the ManagerRef is empty (default-constructed or moved-from)", op));
  m->check_open(op);
  return *m;
}

// Builds an array of `shape` with `fill` and publishes it into `m`.
template <class Fill>
NDArray make(detail::ManagerImpl* m, const Shape& shape, DataType dtype, Site site, const char* op, Fill&& fill) {
  detail::enter();
  detail::ManagerImpl& manager = open_manager(m, op);
  auto out = new_output(shape, dtype, manager.device(), site, op);  // checks the shape: Note [Huge shapes]
  if (out->size() > 0) fill(engine(manager.device()), view_of(*out));
  return detail::publish(std::move(out), manager, detail::Join::create, op);
}

}  // namespace

NDArray ManagerRef::zeros(const Shape& shape, DataType dtype, Site site) const {
  return make(impl_, shape, dtype, site, "zeros", [](Engine& e, const TensorView& v) { e.fill(v, 0); });
}

NDArray ManagerRef::ones(const Shape& shape, DataType dtype, Site site) const {
  return make(impl_, shape, dtype, site, "ones", [](Engine& e, const TensorView& v) { e.fill(v, 1); });
}

NDArray ManagerRef::full(const Shape& shape, double value, DataType dtype, Site site) const {
  return make(impl_, shape, dtype, site, "full", [&](Engine& e, const TensorView& v) { e.fill(v, value); });
}

NDArray ManagerRef::arange(double start, double stop, double step, DataType dtype, Site site) const {
  if (step == 0 || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    throw InvalidArgument(fmt::format("arange({}, {}, {}): the bounds must be finite and the step non-zero", start,
                                      stop, step));
  double count = std::ceil((stop - start) / step);
  // Converting a count past int64 to an integer is undefined behaviour: reject it first.
  if (!(count < 0x1p62))
    throw InvalidArgument(fmt::format("arange({}, {}, {}): {} elements are more than memory can hold", start, stop,
                                      step, count));
  std::int64_t n = count > 0 ? std::int64_t(count) : 0;
  return make(impl_, Shape{n}, dtype, site, "arange",
              [&](Engine& e, const TensorView& v) { e.arange(v, start, step); });
}

NDArray ManagerRef::linspace(double start, double stop, std::int64_t num, DataType dtype, Site site) const {
  if (num < 0) throw InvalidArgument(fmt::format("linspace: num {} must not be negative", num));
  double step = num > 1 ? (stop - start) / double(num - 1) : 0;
  return make(impl_, Shape{num}, dtype, site, "linspace", [&](Engine& e, const TensorView& v) {
    e.arange(v, start, step);
    // start + (num - 1) * step can miss stop by an ulp; the end point is stop exactly, as in NumPy.
    if (num > 1)
      e.fill(contiguous_view(static_cast<char*>(v.data) + (num - 1) * std::int64_t(size_of(dtype)), dtype, Shape{}),
             stop);
  });
}

NDArray ManagerRef::eye(std::int64_t n, DataType dtype, Site site) const { return eye(n, n, dtype, site); }

NDArray ManagerRef::eye(std::int64_t n, std::int64_t m, DataType dtype, Site site) const {
  return make(impl_, Shape{n, m}, dtype, site, "eye", [](Engine& e, const TensorView& v) { e.eye(v); });
}

NDArray ManagerRef::random_uniform(const Shape& shape, double low, double high, DataType dtype, Site site) const {
  if (!(low <= high)) throw InvalidArgument(fmt::format("random_uniform: low {} is above high {}", low, high));
  return make(impl_, shape, dtype, site, "random_uniform", [&](Engine& e, const TensorView& v) {
    e.random_uniform(v, low, high, reserve_random(std::uint64_t(v.size()), device()));
  });
}

NDArray ManagerRef::random_normal(const Shape& shape, double mean, double stddev, DataType dtype, Site site) const {
  if (!(stddev >= 0)) throw InvalidArgument(fmt::format("random_normal: stddev {} is negative", stddev));
  return make(impl_, shape, dtype, site, "random_normal", [&](Engine& e, const TensorView& v) {
    e.random_normal(v, mean, stddev, reserve_random(2 * std::uint64_t(v.size()), device()));
  });
}

NDArray ManagerRef::create_raw(const void* data, DataType dtype, std::size_t count, const Shape& shape,
                               Site site) const {
  if (std::int64_t(count) != shape.size())
    throw InvalidArgument(fmt::format("create: {} values do not fill shape {} ({} elements)", count,
                                      shape.to_string(), shape.size()));
  return make(impl_, shape, dtype, site, "create", [&](Engine& e, const TensorView& v) {
    e.from_host(contiguous_view(const_cast<void*>(data), dtype, shape), v);
  });
}

}  // namespace ndgc
