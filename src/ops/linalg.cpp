// matmul: 2-D products, NumPy's rules for 1-D operands, batched products
// with broadcast batch axes (one product where every batch shares the right
// operand: Note [Stacked rows] in stacked_rows.hpp).
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/ndarray.hpp"
#include "ops/autocast.hpp"
#include "ops/op_support.hpp"
#include "ops/record.hpp"
#include "ops/stacked_rows.hpp"
#include "support/assert.hpp"

namespace ndgc {
namespace {

using namespace ndgc::ops;

// The operand as a view of rank >= 2: a vector becomes a row (lhs) or a column (rhs).
TensorView as_matrix(const ArrayImpl& a, bool lhs) {
  TensorView v = view_of(a);
  if (v.rank == 1) {
    v.rank = 2;
    if (lhs) {
      v.shape[1] = v.shape[0], v.strides[1] = v.strides[0];
      v.shape[0] = 1, v.strides[0] = 0;
    } else {
      v.shape[1] = 1, v.strides[1] = 0;
    }
  }
  return v;
}

// `v` with its batch axes (all but the last two) broadcast to `batch`.
TensorView broadcast_batch(const TensorView& v, const Shape& batch) {
  TensorView out;
  out.data = v.data;
  out.dtype = v.dtype;
  out.rank = batch.rank() + 2;
  const int vb = v.rank - 2, shift = batch.rank() - vb;
  for (int i = 0; i < batch.rank(); ++i) {
    int j = i - shift;
    out.shape[i] = batch[i];
    out.strides[i] = (j < 0 || v.shape[j] != batch[i]) ? 0 : v.strides[j];
  }
  for (int i = 0; i < 2; ++i) {
    out.shape[batch.rank() + i] = v.shape[vb + i];
    out.strides[batch.rank() + i] = v.strides[vb + i];
  }
  return out;
}

}  // namespace

NDArray matmul(const NDArray& x, const NDArray& y, Site site) {
  if (autocast::lowers({&x, &y})) return ndgc::matmul(autocast::lower(x, x, site), autocast::lower(y, x, site), site);
  detail::enter();
  Pinned a(x, "matmul"), b(y, "matmul");
  check_same_device("matmul", *a, *b);
  check_same_dtype("matmul", *a, *b);
  check_numeric("matmul", *a);
  if (a->shape.rank() == 0 || b->shape.rank() == 0)
    throw InvalidArgument(fmt::format("matmul: {} × {}: scalars have no matrix product; use mul", describe(*a),
                                      describe(*b)));
  TensorView va = as_matrix(*a, true), vb = as_matrix(*b, false);
  const std::int64_t m = va.shape[va.rank - 2], k = va.shape[va.rank - 1];
  const std::int64_t k2 = vb.shape[vb.rank - 2], n = vb.shape[vb.rank - 1];
  if (k != k2)
    throw ShapeMismatch(fmt::format("matmul: {} × {}: inner dimensions {} and {} differ", describe(*a),
                                    describe(*b), k, k2));
  Shape batch_a(std::span<const std::int64_t>(va.shape, std::size_t(va.rank - 2)));
  Shape batch_b(std::span<const std::int64_t>(vb.shape, std::size_t(vb.rank - 2)));
  std::optional<Shape> batch = broadcast_shape(batch_a, batch_b);
  if (!batch)
    throw ShapeMismatch(fmt::format("matmul: the batch axes of {} and {} do not broadcast", describe(*a),
                                    describe(*b)));
  Shape full = *batch;
  full.push_back(m);
  full.push_back(n);
  auto out = new_output(full, a->dtype, a->device, site, "matmul");
  batched_matmul(engine(a->device), broadcast_batch(va, *batch), broadcast_batch(vb, *batch), view_of(*out));
  // NumPy: a vector operand's added axis is removed from the result.
  Shape result_shape = *batch;
  if (a->shape.rank() > 1) result_shape.push_back(m);
  if (b->shape.rank() > 1) result_shape.push_back(n);
  out->shape = result_shape;
  out->strides = detail::contiguous_strides(result_shape);
  NDArray result = publish_like(std::move(out), *a, "matmul");
  record({.kind = OpKind::matmul}, {x, y}, result);
  return result;
}

NDArray NDArray::matmul(const NDArray& other, Site site) const { return ndgc::matmul(*this, other, site); }

// Note [Fused linear]: a Linear layer's x × W + b as one op. The bias is
// broadcast into the output first and the engine accumulates the product
// onto it (matmul_add, out += x × W), so the bias costs one write pass over
// the output instead of a read-add-write pass, and the step records one
// tape node and one output array instead of two. x may have batch axes,
// x [..., k] → [..., n], where its rows stack into one matrix (Note
// [Stacked rows] in stacked_rows.hpp): a sequence's projections, as ONNX
// exporters write them. Anything the fused path does not serve (vectors,
// batch axes whose rows do not stack, a bias of another shape, an engine
// without matmul_add for these views) is the composition itself, so the
// errors and results are matmul's and add's.
NDArray linear(const NDArray& x, const NDArray& weight, const NDArray& bias, Site site) {
  if (autocast::lowers({&x, &weight, &bias}))
    return ndgc::linear(autocast::lower(x, x, site), autocast::lower(weight, x, site), autocast::lower(bias, x, site), site);
  detail::enter();
  {
    Pinned a(x, "linear"), w(weight, "linear"), b(bias, "linear");
    const int r = a->shape.rank();
    const bool fusable = r >= 2 && w->shape.rank() == 2 && b->shape.rank() == 1 && a->shape[r - 1] == w->shape[0] &&
                         b->shape[0] == w->shape[1] && a->dtype == w->dtype && a->dtype == b->dtype &&
                         is_floating(a->dtype) && a->device == w->device && a->device == b->device;
    const std::optional<TensorView> va = fusable ? stacked_rows(view_of(*a)) : std::nullopt;
    if (va) {
      const std::int64_t rows = va->shape[0], n = w->shape[1];
      Shape shape = a->shape;
      shape[r - 1] = n;
      auto out = new_output(shape, a->dtype, a->device, site, "linear");
      TensorView o = view_of(*out);  // [..., n] as [rows, n]
      o.rank = 2;
      o.shape[0] = rows, o.strides[0] = n;
      o.shape[1] = n, o.strides[1] = 1;
      TensorView bias_rows = view_of(*b);  // [n] as [rows, n], stride 0 down the rows
      bias_rows.rank = 2;
      bias_rows.shape[1] = bias_rows.shape[0], bias_rows.strides[1] = bias_rows.strides[0];
      bias_rows.shape[0] = rows, bias_rows.strides[0] = 0;
      Engine& e = engine(a->device);
      const TensorView vw = view_of(*w);
      if (e.has_matmul_add(*va, vw, o)) {
        e.copy(bias_rows, o);
        const bool added = e.matmul_add(*va, vw, o);
        NDGC_ASSERT(added, "linear: matmul_add declined views that has_matmul_add accepted");
      } else {
        // The product, then the bias, in the one output: the two roundings
        // of matmul(x, w).add(b), without its intermediate array (a 16-bit
        // step's input projection stays one array, not two).
        e.matmul(*va, vw, o);
        e.binary(Binary::add, o, bias_rows, o);
      }
      NDArray result = publish_like(std::move(out), *a, "linear");
      record({.kind = OpKind::linear}, {x, weight, bias}, result);
      return result;
    }
  }
  return matmul(x, weight, site).add(bias, site);
}

}  // namespace ndgc
