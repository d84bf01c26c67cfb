// embedding: rows of a weight [V, D] gathered by integer indices.
//
// The indices are read by the kernel, which checks them before it writes
// anything (InvalidArgument naming the first bad index, its value and
// position). The gradient goes to the weight only (autograd/layer_rules.cpp):
// the rows of repeated indices are added in index order, without atomics.
// ops::embedding_in_range (ops/embedding.hpp) is the same op for indices the
// caller has checked, which the engine need not check again.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ops/embedding.hpp"
#include "ops/layer_support.hpp"
#include "ops/record.hpp"

namespace ndgc {

using namespace ndgc::ops;

namespace {

NDArray embedding_lookup(const NDArray& indices, const NDArray& weight, bool in_range, Site site) {
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
    Engine& e = engine(pw->device);
    if (in_range) e.embedding_in_range(view_of(*pi), view_of(*pw), ov);
    else e.embedding(view_of(*pi), view_of(*pw), ov);
  }
  NDArray result = publish_like(std::move(out), *pi, op);
  record({.kind = OpKind::embedding, .indices_in_range = in_range}, {indices, weight}, result);
  return result;
}

}  // namespace

NDArray embedding(const NDArray& indices, const NDArray& weight, Site site) {
  return embedding_lookup(indices, weight, false, site);
}

NDArray ops::embedding_in_range(const NDArray& indices, const NDArray& weight, Site site) {
  return embedding_lookup(indices, weight, true, site);
}

}  // namespace ndgc
