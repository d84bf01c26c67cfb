// embedding: rows of a weight [V, D] gathered by integer indices.
//
// The indices are read by the kernel, which checks them before it writes
// anything (InvalidArgument naming the first bad index, its value and
// position). The gradient goes to the weight only (autograd/layer_rules.cpp):
// the rows of repeated indices are added in index order, without atomics.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ops/layer_support.hpp"
#include "ops/record.hpp"

namespace ndgc {

using namespace ndgc::ops;

NDArray embedding(const NDArray& indices, const NDArray& weight, Site site) {
  detail::enter();
  const char* op = "embedding";
  Pinned pi(indices, op), pw(weight, op);
  if (is_floating(pi->dtype) || pi->dtype == DataType::boolean)
    throw DTypeMismatch(fmt::format("{}: indices {} are {}, but must be integers (int32, int64 or uint8)", op,
                                    describe(*pi), to_string(pi->dtype)));
  check_floating(op, *pw);
  check_same_device(op, *pi, *pw);
  check_rank(op, "weight", *pw, 2, "[num_embeddings, dim]");
  check_rank_room(op, *pi);
  check_layer_kernels(op, pw->device);
  Shape shape = pi->shape;
  const std::int64_t dim = pw->shape[1], count = pi->shape.size();
  shape.push_back(dim);
  auto out = new_output(shape, pw->dtype, pw->device, site, op);
  if (count > 0) {
    TensorView ov = view_of(*out);
    if (dim > 0) ov = as_rows(ov, count, dim);
    else ov.rank = 2, ov.shape[0] = count, ov.shape[1] = 0;
    engine(pw->device).embedding(view_of(*pi), view_of(*pw), ov);
  }
  NDArray result = publish_like(std::move(out), *pi, op);
  record({.kind = OpKind::embedding}, {indices, weight}, result);
  return result;
}

}  // namespace ndgc
