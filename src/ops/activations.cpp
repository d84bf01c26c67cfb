// softmax, log_softmax, GELU and one_hot.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/ndarray.hpp"
#include "ops/layer_support.hpp"
#include "ops/op_support.hpp"
#include "ops/autocast.hpp"
#include "ops/record.hpp"

namespace ndgc {
namespace {

using namespace ndgc::ops;

NDArray softmax_impl(const NDArray& x, int axis, bool log, Site site) {
  if (autocast::widens({&x})) return softmax_impl(autocast::widen(x, site), axis, log, site);
  detail::enter();
  const char* op = log ? "log_softmax" : "softmax";
  Pinned a(x, op);
  check_floating(op, *a);
  if (a->shape.rank() == 0) throw InvalidArgument(fmt::format("{}: {} is a scalar; it has no axis", op, describe(*a)));
  const int ax = normalize_axis(op, axis, a->shape.rank(), *a);
  auto out = new_output(a->shape, a->dtype, a->device, site, op);
  if (out->size() > 0) engine(a->device).softmax(view_of(*a), ax, log, view_of(*out));
  NDArray result = publish_like(std::move(out), *a, op);
  record({.kind = log ? OpKind::log_softmax : OpKind::softmax, .axis = ax}, {x}, result);
  return result;
}

}  // namespace

NDArray NDArray::softmax(int axis, Site site) const { return softmax_impl(*this, axis, false, site); }
NDArray NDArray::log_softmax(int axis, Site site) const { return softmax_impl(*this, axis, true, site); }

NDArray NDArray::gelu(Site site) const {
  detail::enter();
  const char* op = "gelu";
  Pinned a(*this, op);
  check_floating(op, *a);
  check_layer_kernels(op, a->device);
  auto out = new_output(a->shape, a->dtype, a->device, site, op);
  if (out->size() > 0) engine(a->device).gelu(view_of(*a), view_of(*out));
  NDArray result = publish_like(std::move(out), *a, op);
  record({.kind = OpKind::gelu}, {*this}, result);
  return result;
}

NDArray NDArray::one_hot(std::int64_t depth, DataType dtype, Site site) const {
  detail::enter();
  Pinned a(*this, "one_hot");
  if (is_floating(a->dtype) || a->dtype == DataType::boolean)
    throw DTypeMismatch(fmt::format("one_hot: {} must hold integer class indices", describe(*a)));
  if (depth <= 0) throw InvalidArgument(fmt::format("one_hot: depth {} must be positive", depth));
  check_rank_room("one_hot", *a);
  Shape shape = a->shape;
  shape.push_back(depth);
  auto out = new_output(shape, dtype, a->device, site, "one_hot");
  engine(a->device).one_hot(view_of(*a), depth, view_of(*out));
  return publish_like(std::move(out), *a, "one_hot");
}

// Note [Fused cross-entropy]: the loss of a classifier, mean over rows of
// -log softmax(logits)[label], is one kernel forward and one backward when
// the logits are contiguous (a layer's fresh output always is): the forward
// writes a scalar, and the backward recomputes each row's softmax from the
// logits and subtracts the label's one, so the tape keeps only the two
// inputs. The composition it replaces makes five arrays (log_softmax,
// one_hot, their product, the sum, the scaled mean) and five tape nodes a
// step. Other layouts, and engines without the kernels, compose exactly
// those ops, so results agree within rounding and errors are the same
// typed errors.
NDArray sparse_softmax_cross_entropy(const NDArray& logits, const NDArray& labels, Site site) {
  if (autocast::widens({&logits})) return sparse_softmax_cross_entropy(autocast::widen(logits, site), labels, site);
  detail::enter();
  const char* op = "sparse_softmax_cross_entropy";
  std::int64_t rows = 0, classes = 0;
  {
    Pinned x(logits, op), l(labels, op);
    check_floating(op, *x);
    if (x->shape.rank() == 0)
      throw InvalidArgument(fmt::format("{}: the logits {} need a class axis", op, describe(*x)));
    check_same_device(op, *x, *l);
    if (l->dtype == DataType::boolean)
      throw DTypeMismatch(fmt::format("{}: labels {} must hold class indices", op, describe(*l)));
    classes = x->shape[x->shape.rank() - 1];
    rows = classes > 0 ? x->shape.size() / classes : 0;
    if (l->shape.size() != rows)
      throw ShapeMismatch(fmt::format("{}: {} labels for {} rows of logits {}; one class index per row", op,
                                      l->shape.size(), rows, describe(*x)));
    const TensorView xv = view_of(*x), lv = view_of(*l);
    if (classes > 0 && xv.is_contiguous() && lv.is_contiguous()) {
      auto out = new_output(Shape{}, x->dtype, x->device, site, op);
      if (engine(x->device).sparse_softmax_cross_entropy(as_rows(xv, rows, classes), as_rows(lv, rows, 0),
                                                         view_of(*out))) {
        NDArray result = publish_like(std::move(out), *x, op);
        record({.kind = OpKind::sparse_softmax_cross_entropy}, {logits, labels}, result);
        return result;
      }
    }
  }
  NDArray label = is_floating(labels.dtype()) ? labels.to_type(DataType::int64, site) : labels;
  Shape row_shape = logits.shape();
  row_shape.erase(row_shape.rank() - 1);
  if (!(label.shape() == row_shape)) label = label.reshape(row_shape, site);
  return logits.log_softmax(-1, site)
      .mul(label.one_hot(classes, logits.dtype(), site), site)
      .sum(site)
      .mul(rows > 0 ? -1.0 / double(rows) : 0.0, site);
}

}  // namespace ndgc
