// Gathering rows into a new array. See gather.hpp.
#include "data/gather.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "data/new_array.hpp"
#include "ops/op_support.hpp"
#include "ops/transfer.hpp"
#include "support/parallel.hpp"

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

  // Runs of consecutive source rows copy in one go: memcpy on the pool for
  // a contiguous host source, the engine's copy otherwise.
  auto copy_rows = [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi;) {
      std::int64_t run = 1;
      while (i + run < hi && indices[std::size_t(i + run)] == indices[std::size_t(i)] + run) ++run;
      const std::int64_t from = indices[std::size_t(i)];
      if (flat) {
        std::memcpy(dst + std::size_t(i) * row_bytes, base + std::size_t(from) * row_bytes, std::size_t(run) * row_bytes);
      } else {
        in.shape[0] = to.shape[0] = run;
        in.data = const_cast<char*>(base) + from * src->strides[0] * std::int64_t(elem);
        to.data = dst + std::size_t(i) * row_bytes;
        ops::engine(src->device).copy(in, to);
      }
      i += run;
    }
  };
  const auto count = std::int64_t(indices.size());
  if (row_bytes > 0 && flat)
    support::parallel_for(count, std::max<std::int64_t>(1, support::kGrainSize / row_elements), copy_rows);
  else if (row_bytes > 0)
    copy_rows(0, count);
  if (m.device() != src->device) {
    std::unique_ptr<ndgc::detail::ArrayImpl> moved = ops::new_output(shape, src->dtype, m.device(), site, op);
    ops::copy_between(ops::view_of(*out), src->device, ops::view_of(*moved), m.device());
    out = std::move(moved);  // the staging copy is freed here
  }
  return ndgc::detail::publish(std::move(out), m, ndgc::detail::Join::create, op);
}

}  // namespace ndgc::data::detail
