// Autocast regions (ndgc/autocast.hpp): a thread-local dtype, and the
// conversions the ops run at their start inside a region.
#include "ops/autocast.hpp"

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ops/op_support.hpp"
#include "ops/record.hpp"

namespace ndgc {
namespace {
thread_local DataType t_lower = DataType::float32;  // float32: no region
}

Autocast::Autocast(DataType lower) : previous_(t_lower) {
  if (!is_half(lower) && lower != DataType::float32)
    throw InvalidArgument(fmt::format("Autocast: {} is not a precision to autocast to (float16, bfloat16, or "
                                      "float32 for none)",
                                      to_string(lower)));
  t_lower = lower;
}

Autocast::~Autocast() { t_lower = previous_; }

DataType Autocast::active() noexcept { return t_lower; }

namespace ops::autocast {
namespace {

// x copied to `dtype`, recorded as to_type, published in `home`'s manager.
NDArray convert(const NDArray& x, DataType dtype, const NDArray& home, Site site) {
  detail::enter();
  Pinned a(x, "autocast"), h(home, "autocast");
  auto out = new_output(a->shape, dtype, a->device, site, "autocast");
  engine(a->device).copy(view_of(*a), view_of(*out));
  NDArray result = publish_like(std::move(out), *h, "autocast");
  record({.kind = OpKind::to_type, .dtype = dtype}, {x}, result);
  return result;
}

}  // namespace

bool lowers(std::initializer_list<const NDArray*> operands) {
  if (t_lower == DataType::float32) return false;
  for (const NDArray* x : operands)
    if (x->defined() && x->dtype() == DataType::float32) return true;
  return false;
}

bool widens(std::initializer_list<const NDArray*> operands) {
  if (t_lower == DataType::float32) return false;
  for (const NDArray* x : operands)
    if (x->defined() && is_half(x->dtype())) return true;
  return false;
}

NDArray lower(const NDArray& x, const NDArray& data, Site site) {
  if (t_lower == DataType::float32 || !x.defined() || x.dtype() != DataType::float32) return x;
  return convert(x, t_lower, data, site);
}

NDArray widen(const NDArray& x, Site site) {
  if (t_lower == DataType::float32 || !x.defined() || !is_half(x.dtype())) return x;
  return convert(x, DataType::float32, x, site);
}

bool promotes(const NDArray& a, const NDArray& b) {
  if (t_lower == DataType::float32) return false;
  const DataType da = a.dtype(), db = b.dtype();
  return da != db && is_floating(da) && is_floating(db);
}

NDArray promote(const NDArray& x, DataType dtype, Site site) {
  if (x.dtype() == dtype || size_of(x.dtype()) > size_of(dtype)) return x;
  return convert(x, dtype, x, site);
}

}  // namespace ops::autocast
}  // namespace ndgc
