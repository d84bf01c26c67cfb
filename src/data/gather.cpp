// Gathering rows into a new array. See gather.hpp.
#include "data/gather.hpp"

#include <cstring>

#include <fmt/format.h>

#include "data/new_array.hpp"
#include "ops/op_support.hpp"
#include "ops/transfer.hpp"

namespace ndgc::data::detail {

NDArray gather_rows(const NDArray& source, std::span<const std::int64_t> indices, const ManagerRef& manager,
                    Site site, const char* op) {
  ndgc::detail::enter();
  ndgc::detail::ManagerImpl& m = open_manager(manager, op);
  ndgc::detail::Pinned src(source, op);
  if (src->shape.rank() == 0)
    throw InvalidArgument(fmt::format("{}: {} is a scalar; samples are rows along axis 0", op, ops::describe(*src)));
  const std::int64_t rows = src->shape[0];
  for (std::size_t i = 0; i < indices.size(); ++i)
    if (indices[i] < 0 || indices[i] >= rows)
      throw InvalidArgument(fmt::format("{}: sample index {} (position {} of the batch) is outside [0, {}) for {}",
                                        op, indices[i], i, rows, ops::describe(*src)));

  Shape shape = src->shape;
  shape[0] = std::int64_t(indices.size());
  // Gathered where the source is; see Note [Batches for another device].
  std::unique_ptr<ndgc::detail::ArrayImpl> out = ops::new_output(shape, src->dtype, src->device, site, op);
  const std::int64_t row_elements = shape[0] == 0 ? 0 : out->size() / shape[0];
  const std::size_t elem = size_of(src->dtype);
  const std::size_t row_bytes = std::size_t(row_elements) * elem;
  auto* dst = static_cast<char*>(out->data());
  const auto* base = static_cast<const char*>(src->data());
  const bool flat = src->device.is_cpu() && src->is_contiguous();
  ops::TensorView in = ops::view_of(*src), to = ops::view_of(*out);

  for (std::size_t i = 0; i < indices.size() && row_bytes > 0;) {
    std::size_t run = 1;  // consecutive source rows copy in one go
    while (i + run < indices.size() && indices[i + run] == indices[i] + std::int64_t(run)) ++run;
    if (flat) {
      std::memcpy(dst + i * row_bytes, base + std::size_t(indices[i]) * row_bytes, run * row_bytes);
    } else {
      in.shape[0] = to.shape[0] = std::int64_t(run);
      in.data = const_cast<char*>(base) + indices[i] * src->strides[0] * std::int64_t(elem);
      to.data = dst + i * row_bytes;
      ops::engine(src->device).copy(in, to);
    }
    i += run;
  }
  if (m.device() != src->device) {
    std::unique_ptr<ndgc::detail::ArrayImpl> moved = ops::new_output(shape, src->dtype, m.device(), site, op);
    ops::copy_between(ops::view_of(*out), src->device, ops::view_of(*moved), m.device());
    out = std::move(moved);  // the staging copy is freed here
  }
  return ndgc::detail::publish(std::move(out), m, ndgc::detail::Join::create, op);
}

}  // namespace ndgc::data::detail
