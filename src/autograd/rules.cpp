// Gradient rules, one function per OpKind. See rules.hpp.
#include "autograd/rules.hpp"

#include "autograd/gradient_state.hpp"
#include "autograd/layer_rules.hpp"
#include "autograd/rule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/registry.hpp"
#include "ops/op_support.hpp"
#include "ops/stacked_rows.hpp"
#include "support/assert.hpp"

namespace ndgc::autograd::detail {
namespace {

using ndgc::detail::Pinned;
using ops::OpKind;

// out += a × b straight into input i's gradient array, when input i is a
// leaf whose gradient has the product's 2-D shape and the engine can
// (saves a temporary and an addition pass per weight per step).
bool add_product_to_leaf(const Rule& r, std::size_t i, const TensorView& a, const TensorView& b) {
  if (r.node.source(i) != kLeaf || a.rank != 2 || b.rank != 2) return false;
  NDArray gradient = gradient_of(r.node.input(i));
  if (!gradient.defined()) return false;
  Pinned target(gradient, "backward");
  if (target->shape.rank() != 2 || target->shape[0] != a.shape[0] || target->shape[1] != b.shape[1] ||
      target->dtype != a.dtype)
    return false;
  return ops::engine(target->device).matmul_add(a, b, ops::view_of(*target));
}

TensorView view(const Pinned& p) { return ops::view_of(*p); }

void binary_rule(Rule& r) {
  Pinned pa = r.input(0), pb = r.input(1);
  const Shape shape = r.g.shape(), sa = pa->shape, sb = pb->shape;
  const TensorView a = view(pa), b = view(pb), g = r.g.view();
  const bool na = r.needs(0), nb = r.needs(1);
  const Device d = r.device();
  switch (r.node.op.binary) {
    case Binary::add:
    case Binary::sub:
      // A broadcast operand (a bias) is summed straight from g's view, so g
      // itself can go to the other operand without a copy.
      if (nb) {
        Scratch t = !na ? std::move(r.g) : sb == shape ? copy(r.g) : reduce_to(g, sb, d);
        if (r.node.op.binary == Binary::sub) unary_into(Unary::neg, t);
        r.out[1] = sum_to(std::move(t), sb);
      }
      if (na) r.out[0] = sum_to(std::move(r.g), sa);
      break;
    case Binary::mul:
      if (na) r.out[0] = sum_to(binary(Binary::mul, g, b, shape, d), sa);
      if (nb) r.out[1] = sum_to(binary(Binary::mul, g, a, shape, d), sb);
      break;
    case Binary::div:  // d/db (a / b) = -(a / b) / b
      if (na) r.out[0] = sum_to(binary(Binary::div, g, b, shape, d), sa);
      if (nb) {
        Pinned po = r.output();
        Scratch t = binary(Binary::mul, g, view(po), shape, d);
        binary_into(Binary::div, t, b);
        unary_into(Unary::neg, t);
        r.out[1] = sum_to(std::move(t), sb);
      }
      break;
    case Binary::pow:  // d/da a^b = b a^(b-1); d/db a^b = a^b ln a
      if (na) {
        Scratch e = scalar(Binary::sub, b, 1, false, d);
        Scratch t = binary(Binary::pow, a, e.view(), shape, d);
        binary_into(Binary::mul, t, b);
        binary_into(Binary::mul, t, g);
        r.out[0] = sum_to(std::move(t), sa);
      }
      if (nb) {
        Pinned po = r.output();
        Scratch ln = unary(Unary::log, a, d);
        Scratch t = binary(Binary::mul, g, view(po), shape, d);
        binary_into(Binary::mul, t, ln.view());
        r.out[1] = sum_to(std::move(t), sb);
      }
      break;
    case Binary::maximum:
    case Binary::minimum: {
      Scratch first = binary(r.node.op.binary == Binary::maximum ? Binary::ge : Binary::le, a, b, shape, d);
      Scratch zero = r.zero();
      if (na) r.out[0] = sum_to(where(first.view(), g, zero.view(), shape, d), sa);
      if (nb) r.out[1] = sum_to(where(first.view(), zero.view(), g, shape, d), sb);
      break;
    }
    default: NDGC_ASSERT(false, "binary_rule: a comparison was recorded (comparisons cut the graph)");
  }
}

void scalar_rule(Rule& r) {
  Pinned px = r.input(0);
  const TensorView x = view(px);
  const double s = r.node.op.scalar;
  const bool left = r.node.op.scalar_left;
  const Device d = r.device();
  Scratch t;
  switch (r.node.op.binary) {
    case Binary::add: t = std::move(r.g); break;
    case Binary::sub:
      t = std::move(r.g);
      if (left) unary_into(Unary::neg, t);
      break;
    case Binary::mul:
      t = std::move(r.g);
      scalar_into(Binary::mul, t, s);
      break;
    case Binary::div:
      t = std::move(r.g);
      if (!left) {
        scalar_into(Binary::div, t, s);
      } else {  // d/dx s / x = -(s / x) / x
        Pinned po = r.output();
        binary_into(Binary::mul, t, view(po));
        binary_into(Binary::div, t, x);
        unary_into(Unary::neg, t);
      }
      break;
    case Binary::pow:
      if (left) {  // d/dx s^x = s^x ln s
        Pinned po = r.output();
        t = std::move(r.g);
        binary_into(Binary::mul, t, view(po));
        scalar_into(Binary::mul, t, std::log(s));
      } else {  // d/dx x^s = s x^(s-1)
        t = scalar(Binary::pow, x, s - 1, false, d);
        binary_into(Binary::mul, t, r.g.view());
        scalar_into(Binary::mul, t, s);
      }
      break;
    case Binary::maximum:
    case Binary::minimum: {
      Scratch first = scalar(r.node.op.binary == Binary::maximum ? Binary::ge : Binary::le, x, s, false, d);
      Scratch zero = r.zero();
      t = where(first.view(), r.g.view(), zero.view(), r.g.shape(), d);
      break;
    }
    default: return;
  }
  r.out[0] = std::move(t);
}

// g / sqrt(sign · (x² + offset)), sign -1 reading (offset - x²): the inverse
// trigonometric and hyperbolic functions' derivatives.
Scratch over_root(const Rule& r, const TensorView& x, double offset, bool flip, const Shape& shape, Device d) {
  Scratch t = binary(Binary::mul, x, x, shape, d);
  scalar_into(flip ? Binary::sub : Binary::add, t, offset, flip);
  unary_into(Unary::sqrt, t);
  return binary(Binary::div, r.g.view(), t.view(), shape, d);
}

// The gradients of the element-wise functions added for ONNX (floor to erf).
Scratch math_gradient(Rule& r, const TensorView& x, const Shape& shape, Device d) {
  Scratch t;
  switch (r.node.op.unary) {
    case Unary::floor:
    case Unary::ceil:
    case Unary::round: return full(shape, r.g.dtype(), d, 0);  // piecewise constant
    case Unary::sin: t = unary(Unary::cos, x, d); break;
    case Unary::cos:
      t = unary(Unary::sin, x, d);
      unary_into(Unary::neg, t);
      break;
    case Unary::tan: {  // 1 + y^2
      Pinned po = r.output();
      t = binary(Binary::mul, view(po), view(po), shape, d);
      scalar_into(Binary::add, t, 1);
      break;
    }
    case Unary::asin: return over_root(r, x, 1, true, shape, d);  // 1 / sqrt(1 - x^2)
    case Unary::acos: {
      t = over_root(r, x, 1, true, shape, d);
      unary_into(Unary::neg, t);
      return t;
    }
    case Unary::atan:  // 1 / (1 + x^2)
    case Unary::atanh: {  // 1 / (1 - x^2)
      t = binary(Binary::mul, x, x, shape, d);
      const bool hyperbolic = r.node.op.unary == Unary::atanh;
      scalar_into(hyperbolic ? Binary::sub : Binary::add, t, 1, hyperbolic);
      return binary(Binary::div, r.g.view(), t.view(), shape, d);
    }
    case Unary::sinh: t = unary(Unary::cosh, x, d); break;
    case Unary::cosh: t = unary(Unary::sinh, x, d); break;
    case Unary::asinh: return over_root(r, x, 1, false, shape, d);   // 1 / sqrt(x^2 + 1)
    case Unary::acosh: return over_root(r, x, -1, false, shape, d);  // 1 / sqrt(x^2 - 1)
    case Unary::erf:  // 2 / sqrt(pi) exp(-x^2)
      t = binary(Binary::mul, x, x, shape, d);
      unary_into(Unary::neg, t);
      unary_into(Unary::exp, t);
      scalar_into(Binary::mul, t, 2.0 / std::sqrt(std::numbers::pi));
      break;
    default: NDGC_ASSERT(false, "every Unary has a gradient rule");
  }
  binary_into(Binary::mul, t, r.g.view());
  return t;
}

void unary_rule(Rule& r) {
  Pinned px = r.input(0);
  const TensorView x = view(px);
  const Shape shape = r.g.shape();
  const Device d = r.device();
  Scratch t;
  switch (r.node.op.unary) {
    case Unary::neg:
      t = std::move(r.g);
      unary_into(Unary::neg, t);
      break;
    case Unary::abs: {  // sign(x), 0 at 0
      Scratch pos = scalar(Binary::gt, x, 0, false, d), neg = scalar(Binary::lt, x, 0, false, d);
      Scratch zero = r.zero();
      Scratch minus = unary(Unary::neg, r.g.view(), d);
      Scratch positive = where(pos.view(), r.g.view(), zero.view(), shape, d);
      t = where(neg.view(), minus.view(), positive.view(), shape, d);
      break;
    }
    case Unary::exp: {
      Pinned po = r.output();
      t = std::move(r.g);
      binary_into(Binary::mul, t, view(po));
      break;
    }
    case Unary::log:
      t = std::move(r.g);
      binary_into(Binary::div, t, x);
      break;
    case Unary::sqrt: {  // 1 / (2 sqrt x)
      Pinned po = r.output();
      t = std::move(r.g);
      binary_into(Binary::div, t, view(po));
      scalar_into(Binary::mul, t, 0.5);
      break;
    }
    case Unary::square:
      t = std::move(r.g);
      binary_into(Binary::mul, t, x);
      scalar_into(Binary::mul, t, 2);
      break;
    case Unary::relu: {
      t = std::move(r.g);  // fused, in place: g = x > 0 ? g : 0
      if (t.engine().relu_backward(x, t.view(), t.view())) break;
      r.g = std::move(t);
      Scratch pos = scalar(Binary::gt, x, 0, false, d);
      Scratch zero = r.zero();
      t = where(pos.view(), r.g.view(), zero.view(), shape, d);
      break;
    }
    case Unary::sigmoid: {  // y (1 - y)
      Pinned po = r.output();
      t = scalar(Binary::sub, view(po), 1, true, d);
      binary_into(Binary::mul, t, view(po));
      binary_into(Binary::mul, t, r.g.view());
      break;
    }
    case Unary::tanh: {  // 1 - y^2
      Pinned po = r.output();
      t = binary(Binary::mul, view(po), view(po), shape, d);
      scalar_into(Binary::sub, t, 1, true);
      binary_into(Binary::mul, t, r.g.view());
      break;
    }
    default:
      t = math_gradient(r, x, shape, d);
  }
  r.out[0] = std::move(t);
}

void reduce_rule(Rule& r) {
  Pinned px = r.input(0);
  const TensorView x = view(px);
  const Shape shape = px->shape;
  const std::uint32_t mask = r.node.op.axes;
  Shape kept = shape;
  std::int64_t count = 1;
  for (int i = 0; i < shape.rank(); ++i)
    if (mask >> i & 1) {
      count *= shape[i];
      kept[i] = 1;
    }
  const Device d = r.device();
  r.g.reshape(kept);
  switch (r.node.op.reduce) {
    case Reduce::sum: r.out[0] = copy(r.g.view(), shape, r.g.dtype(), d); break;
    case Reduce::mean: {
      Scratch t = copy(r.g.view(), shape, r.g.dtype(), d);
      if (count > 0) scalar_into(Binary::div, t, double(count));
      r.out[0] = std::move(t);
      break;
    }
    case Reduce::max:
    case Reduce::min: {  // shared equally among the elements equal to the result
      Pinned po = r.output();
      const TensorView result = ops::contiguous_view(po->data(), po->dtype, kept);
      Scratch hit = binary(Binary::eq, x, result, shape, d);
      Scratch share = copy(hit.view(), shape, r.g.dtype(), d);
      Scratch ties = reduce(Reduce::sum, share.view(), mask, d);
      Scratch t = std::move(r.g);
      binary_into(Binary::div, t, ties.view());
      binary_into(Binary::mul, share, t.view());
      r.out[0] = std::move(share);
      break;
    }
  }
}

// An operand of matmul as a matrix (rank >= 2), as the ops layer sees it:
// a vector is a row on the left, a column on the right.
TensorView as_matrix(TensorView v, bool lhs) {
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

Shape batch_of(const TensorView& v) {
  return Shape(std::span<const std::int64_t>(v.shape, std::size_t(v.rank - 2)));
}

Shape with_matrix(Shape batch, std::int64_t rows, std::int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

// A 2-D B shared by every batch of a (broadcast to the batch) and g: dB is
// the one product of their stacked rows, aᵀ g (Note [Stacked rows] in
// ops/stacked_rows.hpp). False where the rows do not stack.
bool shared_weight_gradient(Rule& r, const TensorView& a, const TensorView& g) {
  const std::optional<TensorView> as = ops::stacked_rows(a), gs = ops::stacked_rows(g);
  if (!as || !gs) return false;
  if (add_product_to_leaf(r, 1, swap_last(*as), *gs)) return true;
  const std::int64_t k = as->shape[1], n = gs->shape[1];
  Scratch t(Shape{k, n}, as->dtype, r.device());
  if (t.shape().size() > 0) t.engine().matmul(swap_last(*as), *gs, t.view());
  r.out[1] = std::move(t);
  return true;
}

// d/dA (A B) = G Bᵀ, d/dB (A B) = Aᵀ G, batch axes summed back to each operand's.
void matmul_rule(Rule& r) {
  Pinned pa = r.input(0), pb = r.input(1);
  const TensorView a = as_matrix(view(pa), true), b = as_matrix(view(pb), false);
  const std::int64_t m = a.shape[a.rank - 2], k = a.shape[a.rank - 1], n = b.shape[b.rank - 1];
  const Shape batch = *ops::broadcast_shape(batch_of(a), batch_of(b));
  r.g.reshape(with_matrix(batch, m, n));
  const TensorView g = r.g.view();
  const Device d = r.device();
  const bool plain = batch.rank() == 0;  // 2-D operands, no batch axes
  if (r.needs(0) && !(plain && pa->shape.rank() == 2 && add_product_to_leaf(r, 0, g, swap_last(b)))) {
    Scratch t(with_matrix(batch, m, k), a.dtype, d);
    if (t.shape().size() > 0) {
      const TensorView bt = swap_last(b);
      ops::batched_matmul(t.engine(), g, bview(bt, with_matrix(batch, n, k)), t.view());
    }
    t = sum_to(std::move(t), shape_of(a));
    t.reshape(pa->shape);
    r.out[0] = std::move(t);
  }
  const bool matrix_b = pb->shape.rank() == 2;
  if (r.needs(1) && !(plain && matrix_b && add_product_to_leaf(r, 1, swap_last(a), g)) &&
      !(!plain && matrix_b && shared_weight_gradient(r, bview(a, with_matrix(batch, m, k)), g))) {
    Scratch t(with_matrix(batch, k, n), b.dtype, d);
    if (t.shape().size() > 0) {
      const TensorView at = swap_last(a);
      t.engine().matmul(bview(at, with_matrix(batch, k, m)), g, t.view());
    }
    t = sum_to(std::move(t), shape_of(b));
    t.reshape(pb->shape);
    r.out[1] = std::move(t);
  }
}

// x × W + b (Note [Fused linear]): the bias's gradient is g summed over
// the rows, taken from g's view before matmul's rule uses g for x and W.
void linear_rule(Rule& r) {
  if (r.needs(2)) {
    Pinned pb = r.input(2);
    r.out[2] = reduce_to(r.g.view(), pb->shape, r.device());
  }
  matmul_rule(r);
}

// Note [Fused cross-entropy]: g / rows * (softmax(logits) - one_hot(labels))
// into the logits; labels get no gradient. An engine with the forward kernel
// but not the backward one gets the same composed from softmax and one_hot.
void sparse_cross_entropy_rule(Rule& r) {
  if (!r.needs(0)) return;
  Pinned px = r.input(0), pl = r.input(1);
  const std::int64_t classes = px->shape[px->shape.rank() - 1], rows = px->shape.size() / classes;
  const TensorView x = ops::as_rows(view(px), rows, classes), labels = ops::as_rows(view(pl), rows, 0);
  Scratch t(px->shape, px->dtype, r.device());
  const TensorView t_rows = ops::as_rows(t.view(), rows, classes);
  if (!t.engine().sparse_softmax_cross_entropy_backward(x, labels, r.g.view(), t_rows)) {
    t.engine().softmax(x, 1, false, t_rows);
    Scratch hot(Shape{rows, classes}, px->dtype, r.device());
    t.engine().one_hot(labels, classes, hot.view());
    hot.reshape(px->shape);
    binary_into(Binary::sub, t, hot.view());
    scalar_into(Binary::mul, t, 1.0 / double(rows));
    binary_into(Binary::mul, t, r.g.view());
  }
  r.out[0] = std::move(t);
}

void permute_rule(Rule& r) {
  Pinned px = r.input(0);
  const ops::Permutation& perm = r.detail<ops::Permutation>();
  int inverse[kMaxRank] = {};
  for (int i = 0; i < perm.rank; ++i) inverse[perm.axes[std::size_t(i)]] = i;
  r.out[0] = copy(r.g.view().permuted(inverse), px->shape, r.g.dtype(), r.device());
}

// The view that NDArray::get(index) makes of `v` (the index was validated
// when the op ran). Mirrors the indexing in ops/views.cpp.
TensorView index_view(const TensorView& v, const NDIndex& index) {
  using Kind = NDIndex::Item::Kind;
  int consumed = 0;
  for (const auto& it : index.items())
    if (it.kind != Kind::ellipsis) ++consumed;
  TensorView out = v;
  out.rank = 0;
  std::int64_t offset = 0;
  int axis = 0;
  auto keep = [&](int ax, std::int64_t length, std::int64_t stride) {
    out.shape[out.rank] = length;
    out.strides[out.rank] = stride;
    ++out.rank;
    (void)ax;
  };
  for (const auto& it : index.items()) {
    if (it.kind == Kind::ellipsis) {
      for (int n = v.rank - consumed; n > 0; --n, ++axis) keep(axis, v.shape[axis], v.strides[axis]);
      continue;
    }
    const std::int64_t len = v.shape[axis];
    if (it.kind == Kind::all) {
      keep(axis, len, v.strides[axis]);
    } else if (it.kind == Kind::index) {
      offset += (it.index < 0 ? it.index + len : it.index) * v.strides[axis];
    } else {
      auto clamp = [&](std::optional<std::int64_t> x, std::int64_t fallback) {
        if (!x) return fallback;
        std::int64_t y = *x < 0 ? *x + len : *x;
        return std::clamp<std::int64_t>(y, 0, len);
      };
      const std::int64_t start = clamp(it.start, 0), stop = clamp(it.stop, len);
      const std::int64_t count = stop > start ? (stop - start + it.step - 1) / it.step : 0;
      offset += (count > 0 ? start : 0) * v.strides[axis];
      keep(axis, count, v.strides[axis] * it.step);
    }
    ++axis;
  }
  for (; axis < v.rank; ++axis) keep(axis, v.shape[axis], v.strides[axis]);
  out.data = static_cast<char*>(v.data) + offset * std::int64_t(size_of(v.dtype));
  return out;
}

void get_rule(Rule& r) {
  Pinned px = r.input(0);
  Scratch t = full(px->shape, r.g.dtype(), r.device(), 0);
  const TensorView part = index_view(t.view(), r.detail<NDIndex>());
  if (r.g.shape().size() > 0) t.engine().copy(r.g.view(), part);
  r.out[0] = std::move(t);
}

// concat and stack: each input's gradient is its slice of g.
void join_rule(Rule& r, bool stack) {
  const int axis = r.node.op.axis;
  const TensorView g = r.g.view();
  std::int64_t at = 0;
  for (std::size_t i = 0; i < r.node.size(); ++i) {
    Pinned pi = r.input(i);
    const std::int64_t length = stack ? 1 : pi->shape[axis];
    if (r.needs(i)) {
      TensorView part = g.narrow(axis, at, length);
      if (stack) {  // drop the stacked axis
        for (int j = axis; j + 1 < part.rank; ++j) {
          part.shape[j] = part.shape[j + 1];
          part.strides[j] = part.strides[j + 1];
        }
        --part.rank;
      }
      r.out[i] = copy(part, pi->shape, g.dtype, r.device());
    }
    at += length;
  }
}

void softmax_rule(Rule& r, bool log) {
  Pinned po = r.output();
  const TensorView y = view(po);
  const std::uint32_t mask = std::uint32_t(1) << r.node.op.axis;
  const Device d = r.device();
  if (!log) {  // y (g - sum(g y))
    Scratch gy = binary(Binary::mul, r.g.view(), y, r.g.shape(), d);
    Scratch total = reduce(Reduce::sum, gy.view(), mask, d);
    Scratch t = std::move(r.g);
    binary_into(Binary::sub, t, total.view());
    binary_into(Binary::mul, t, y);
    r.out[0] = std::move(t);
  } else {  // g - exp(y) sum(g)
    Scratch p = unary(Unary::exp, y, d);
    Scratch total = reduce(Reduce::sum, r.g.view(), mask, d);
    binary_into(Binary::mul, p, total.view());
    Scratch t = std::move(r.g);
    binary_into(Binary::sub, t, p.view());
    r.out[0] = std::move(t);
  }
}

void where_rule(Rule& r) {
  Pinned pc = r.input(0), px = r.input(1), py = r.input(2);
  const Shape shape = r.g.shape();
  Scratch zero = r.zero();
  if (r.needs(1)) r.out[1] = sum_to(where(view(pc), r.g.view(), zero.view(), shape, r.device()), px->shape);
  if (r.needs(2)) r.out[2] = sum_to(where(view(pc), zero.view(), r.g.view(), shape, r.device()), py->shape);
}

void to_type_rule(Rule& r) {
  Pinned px = r.input(0);
  if (is_floating(px->dtype)) r.out[0] = copy(r.g.view(), px->shape, px->dtype, r.device());
}

// Note [Gradient across devices]
// y = x.to_device(d) is the identity on values, so dx = dy, but dy lives on
// d and x's gradient (and every node that produced x) on x's device: the
// rule copies it back. Every other rule keeps its input's device, because
// ops refuse inputs on different devices (DeviceMismatch), so this is the
// only place a backward pass crosses devices, and it costs one transfer per
// to_device in the forward pass, the same as the forward copy.
void to_device_rule(Rule& r) {
  Pinned px = r.input(0);
  if (px->device == r.device()) r.out[0] = std::move(r.g);  // a copy on one device: as OpKind::copy
  else r.out[0] = transfer(r.g.view(), r.device(), px->device);
}

}  // namespace

void input_gradients(const Node& node, const ops::OpDetail* detail, Scratch g, std::vector<Scratch>& out) {
  out.clear();
  out.resize(node.size());
  Rule r{node, detail, std::move(g), out};
  switch (node.op.kind) {
    case OpKind::binary: binary_rule(r); break;
    case OpKind::binary_scalar: scalar_rule(r); break;
    case OpKind::unary: unary_rule(r); break;
    case OpKind::reduce: reduce_rule(r); break;
    case OpKind::matmul: matmul_rule(r); break;
    case OpKind::reshape: {
      Pinned px = r.input(0);
      r.g.reshape(px->shape);
      out[0] = std::move(r.g);
      break;
    }
    case OpKind::permute: permute_rule(r); break;
    case OpKind::broadcast_to: {
      Pinned px = r.input(0);
      out[0] = sum_to(std::move(r.g), px->shape);
      break;
    }
    case OpKind::get: get_rule(r); break;
    case OpKind::concat: join_rule(r, false); break;
    case OpKind::stack: join_rule(r, true); break;
    case OpKind::softmax: softmax_rule(r, false); break;
    case OpKind::log_softmax: softmax_rule(r, true); break;
    case OpKind::where: where_rule(r); break;
    case OpKind::to_type: to_type_rule(r); break;
    case OpKind::copy: out[0] = std::move(r.g); break;
    case OpKind::linear: linear_rule(r); break;
    case OpKind::sparse_softmax_cross_entropy: sparse_cross_entropy_rule(r); break;
    case OpKind::to_device: to_device_rule(r); break;
    case OpKind::conv2d:
    case OpKind::max_pool2d:
    case OpKind::avg_pool2d:
    case OpKind::gelu:
    case OpKind::dropout:
    case OpKind::embedding:
    case OpKind::layer_norm:
    case OpKind::batch_norm:
    case OpKind::lstm_cell:
    case OpKind::lstm_layer: layer_gradients(r); break;
  }
}

}  // namespace ndgc::autograd::detail
