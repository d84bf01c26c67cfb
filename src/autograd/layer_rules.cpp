// Gradient rules of the layer ops. See layer_rules.hpp.
//
// Each rule recomputes what its forward pass did not keep (Note [Convolution
// as GEMM] in ops/conv.cpp, Note [Dropout masks from the stream] in
// ops/dropout.cpp): im2col columns, normalisation statistics, dropout masks.
// Intermediates are Scratch, so a backward pass leaves nothing in any
// manager.
#include "autograd/layer_rules.hpp"
#include "autograd/rule.hpp"

#include "support/assert.hpp"

#include <algorithm>
#include <optional>

#include "core/registry.hpp"
#include "ops/lstm_sequence.hpp"
#include "ops/op_support.hpp"

namespace ndgc::autograd::detail {
namespace {

using ndgc::detail::Pinned;
using ops::OpKind;

TensorView view(const Pinned& p) { return ops::view_of(*p); }

// `v` itself when contiguous, else a contiguous copy held in `keep`.
TensorView contiguous(const TensorView& v, Scratch& keep, Device d) {
  if (v.is_contiguous()) return v;
  keep = copy(v, shape_of(v), v.dtype, d);
  return keep.view();
}

TensorView with(TensorView v, std::initializer_list<std::int64_t> shape, std::initializer_list<std::int64_t> strides) {
  v.rank = int(shape.size());
  int i = 0;
  for (auto s : shape) v.shape[i++] = s;
  i = 0;
  for (auto s : strides) v.strides[i++] = s;
  return v;
}

// The gradients of x (0) and the weight (1) that the engine's own
// convolutions serve (Engine::conv2d_backward_*_direct: cuDNN's on the GPU)
// go into r.out; the im2col path below computes the rest.
void conv2d_direct_gradients(Rule& r) {
  ops::Engine& e = r.engine();
  if (!e.has_conv2d_gradients()) return;
  Pinned px = r.input(0), pw = r.input(1);
  const ops::Window2d& w = r.detail<ops::Window2d>();
  if (r.needs(0)) {
    Scratch dx(px->shape, px->dtype, r.device()), keep;
    const TensorView wv = contiguous(view(pw), keep, r.device());
    if (e.conv2d_backward_data_direct(r.g.view(), wv, w, dx.view())) r.out[0] = std::move(dx);
  }
  if (r.needs(1)) {
    Scratch dw(pw->shape, pw->dtype, r.device());
    if (e.conv2d_backward_weight_direct(view(px), r.g.view(), w, dw.view())) r.out[1] = std::move(dw);
  }
}

// Note [Convolution as GEMM] in ops/conv.cpp, backwards: with g as
// [N, G, O/G, L] and the recomputed col [N, G, K, L], dW = Σ_n g colᵀ,
// dcol = Wᵀ g, dx = col2im(dcol), dbias = g summed over N, H', W'; col and
// dcol a chunk of images at a time. Engines with convolutions of their own
// take the gradients first (conv2d_direct_gradients).
void conv2d_rule(Rule& r) {
  Pinned px = r.input(0), pw = r.input(1);
  const ops::Window2d& w = r.detail<ops::Window2d>();
  const std::int64_t n = px->shape[0], o = pw->shape[0], groups = w.groups, og = o / groups;
  const std::int64_t k = pw->shape[1] * w.kernel[0] * w.kernel[1], l = r.g.shape()[2] * r.g.shape()[3];
  const DataType dt = px->dtype;
  const bool empty = r.g.shape().size() == 0;
  const TensorView g4 = ops::contiguous_view(r.g.view().data, dt, Shape{n, groups, og, l});
  if (r.needs(2)) {
    Pinned pb = r.input(2);
    Scratch b = empty ? full(pb->shape, dt, r.device(), 0) : reduce(Reduce::sum, r.g.view(), 0b1101, r.device());
    b.reshape(pb->shape);
    r.out[2] = std::move(b);
  }
  if (!r.needs(0) && !r.needs(1)) return;
  if (empty) {
    if (r.needs(1)) r.out[1] = full(pw->shape, dt, r.device(), 0);
    if (r.needs(0)) r.out[0] = full(px->shape, dt, r.device(), 0);
    return;
  }
  conv2d_direct_gradients(r);
  const bool need_dx = r.needs(0) && !r.out[0], need_dw = r.needs(1) && !r.out[1];
  if (!need_dx && !need_dw) return;
  // Chunk by chunk of images (Note [Convolution as GEMM] in ops/conv.cpp),
  // one column buffer serving both: the chunk's columns for dW, then dcol =
  // Wᵀ g for dx.
  ops::Engine& e = r.engine();
  const std::int64_t chunk = e.im2col_images(n, groups * k * l * std::int64_t(size_of(dt)));
  Scratch col(Shape{chunk, groups, k, l}, dt, r.device());
  std::optional<Scratch> dw, dx;
  Scratch keep;
  TensorView wt;
  if (need_dw) dw.emplace(Shape{n, groups, og, k}, dt, r.device());  // per image, summed below
  if (need_dx) {
    dx.emplace(px->shape, dt, r.device());
    const TensorView wv = contiguous(view(pw), keep, r.device());
    wt = with(wv, {n, groups, k, og}, {0, og * k, 1, k});  // Wᵀ per group, every image
  }
  const TensorView xv = view(px);
  ops::Engine::for_each_chunk(n, chunk, [&](std::int64_t first, std::int64_t count) {
    const TensorView cv = col.view().narrow(0, 0, count), gv = g4.narrow(0, first, count);
    if (dw) {
      e.im2col(xv.narrow(0, first, count), w, cv);
      e.matmul(gv, swap_last(cv), dw->view().narrow(0, first, count));
    }
    if (dx) {
      e.matmul(wt.narrow(0, first, count), gv, cv);
      e.col2im(cv, w, dx->view().narrow(0, first, count));
    }
  });
  if (dw) {
    Scratch total = n == 1 ? std::move(*dw) : reduce(Reduce::sum, dw->view(), 1, r.device());
    total.reshape(pw->shape);
    r.out[1] = std::move(total);
  }
  if (dx) r.out[0] = std::move(*dx);
}

void pool2d_rule(Rule& r, bool max) {
  if (!r.needs(0)) return;
  Pinned px = r.input(0);
  Scratch dx(px->shape, px->dtype, r.device());
  if (r.g.shape().size() == 0) dx = full(px->shape, px->dtype, r.device(), 0);
  else r.engine().pool2d_backward(max, view(px), r.g.view(), r.detail<ops::Window2d>(), dx.view());
  r.out[0] = std::move(dx);
}

void gelu_rule(Rule& r) {
  if (!r.needs(0)) return;
  Pinned px = r.input(0);
  Scratch dx(px->shape, px->dtype, r.device());
  if (dx.shape().size() > 0) r.engine().gelu_backward(view(px), r.g.view(), dx.view());
  r.out[0] = std::move(dx);
}

// Note [Dropout masks from the stream] in ops/dropout.cpp.
void dropout_rule(Rule& r) {
  if (!r.needs(0)) return;
  Scratch dx(r.g.shape(), r.g.dtype(), r.device());
  const ops::RandomDraw& stream = r.detail<ops::RandomDraw>();
  if (dx.shape().size() > 0) r.engine().dropout(r.g.view(), r.node.op.scalar, stream, dx.view());
  r.out[0] = std::move(dx);
}

void embedding_rule(Rule& r) {
  if (!r.needs(1)) return;
  Pinned pi = r.input(0), pw = r.input(1);
  const std::int64_t count = pi->shape.size(), dim = pw->shape[1];
  if (count == 0 || dim == 0) {
    r.out[1] = full(pw->shape, pw->dtype, r.device(), 0);
    return;
  }
  Scratch dw(pw->shape, pw->dtype, r.device());
  const ops::TensorView rows = ops::as_rows(r.g.view(), count, dim);
  if (r.node.op.indices_in_range) r.engine().embedding_backward_in_range(view(pi), rows, dw.view());
  else r.engine().embedding_backward(view(pi), rows, dw.view());
  r.out[1] = std::move(dw);
}

void layer_norm_rule(Rule& r) {
  Pinned px = r.input(0), pg = r.input(1);
  const std::int64_t dim = pg->shape.size(), rows = dim > 0 ? px->shape.size() / dim : 0;
  const DataType dt = px->dtype;
  if (rows == 0 || dim == 0) {
    if (r.needs(0)) r.out[0] = full(px->shape, dt, r.device(), 0);
    if (r.needs(1)) r.out[1] = full(pg->shape, dt, r.device(), 0);
    if (r.needs(2)) r.out[2] = full(pg->shape, dt, r.device(), 0);
    return;
  }
  Scratch kx, kg, dx, dgamma, dbeta;
  const TensorView xv = ops::as_rows(contiguous(view(px), kx, r.device()), rows, dim);
  const TensorView gv = ops::as_rows(contiguous(view(pg), kg, r.device()), dim, 0);
  TensorView dxv{}, dgv{}, dbv{};
  if (r.needs(0)) dx = Scratch(px->shape, dt, r.device()), dxv = ops::as_rows(dx.view(), rows, dim);
  if (r.needs(1)) dgamma = Scratch(pg->shape, dt, r.device()), dgv = ops::as_rows(dgamma.view(), dim, 0);
  if (r.needs(2)) dbeta = Scratch(pg->shape, dt, r.device()), dbv = ops::as_rows(dbeta.view(), dim, 0);
  r.engine().layer_norm_backward(xv, gv, ops::as_rows(r.g.view(), rows, dim), r.node.op.scalar, dxv, dgv, dbv);
  if (r.needs(0)) r.out[0] = std::move(dx);
  if (r.needs(1)) r.out[1] = std::move(dgamma);
  if (r.needs(2)) r.out[2] = std::move(dbeta);
}

// Training: the batch statistics are recomputed from x (they depend on it);
// otherwise the recorded running statistics are constants.
void batch_norm_rule(Rule& r) {
  Pinned px = r.input(0), pg = r.input(1);
  const DataType dt = px->dtype, pt = pg->dtype;  // pt: float32 for a 16-bit x (Note [Norms in mixed precision])
  const std::int64_t n = px->shape[0], c = px->shape[1];
  const std::int64_t spatial = n > 0 && c > 0 ? px->shape.size() / (n * c) : 0;
  if (px->shape.size() == 0) {
    if (r.needs(0)) r.out[0] = full(px->shape, dt, r.device(), 0);
    if (r.needs(1)) r.out[1] = full(pg->shape, pt, r.device(), 0);
    if (r.needs(2)) r.out[2] = full(pg->shape, pt, r.device(), 0);
    return;
  }
  Scratch kx, mean, var, dx, dgamma, dbeta;
  const TensorView xv = with(contiguous(view(px), kx, r.device()), {n, c, spatial}, {c * spatial, spatial, 1});
  TensorView mv, vv;
  std::optional<Pinned> pm, pv;
  if (r.node.op.training) {
    mean = Scratch(Shape{c}, pt, r.device()), var = Scratch(Shape{c}, pt, r.device());
    r.engine().batch_norm_stats(xv, mean.view(), var.view());
    mv = mean.view(), vv = var.view();
  } else {
    pm.emplace(r.input(3)), pv.emplace(r.input(4));
    mv = view(*pm), vv = view(*pv);
  }
  TensorView dxv{}, dgv{}, dbv{};
  if (r.needs(0)) dx = Scratch(px->shape, dt, r.device()), dxv = with(dx.view(), {n, c, spatial}, {c * spatial, spatial, 1});
  if (r.needs(1)) dgamma = Scratch(pg->shape, pt, r.device()), dgv = dgamma.view();
  if (r.needs(2)) dbeta = Scratch(pg->shape, pt, r.device()), dbv = dbeta.view();
  const TensorView gv = with(r.g.view(), {n, c, spatial}, {c * spatial, spatial, 1});
  r.engine().batch_norm_backward(xv, mv, vv, view(pg), gv, r.node.op.scalar, r.node.op.training, dxv, dgv, dbv);
  if (r.needs(0)) r.out[0] = std::move(dx);
  if (r.needs(1)) r.out[1] = std::move(dgamma);
  if (r.needs(2)) r.out[2] = std::move(dbeta);
}

// Note [One output for two states] in ops/lstm_cell.cpp: g is [2, B, H] =
// {dh', dc'}; both gate inputs get the pre-activations' gradient.
void lstm_cell_rule(Rule& r) {
  const bool gates = r.needs(0) || r.needs(1);
  if (!gates && !r.needs(2)) return;
  Pinned pi = r.input(0), ph = r.input(1), pc = r.input(2);
  const DataType dt = pc->dtype;
  Scratch di, dh, dc;
  if (r.needs(0)) di = Scratch(pi->shape, dt, r.device());
  if (r.needs(1)) dh = Scratch(ph->shape, dt, r.device());
  if (r.needs(2)) dc = Scratch(pc->shape, dt, r.device());
  if (pc->shape.size() > 0)
    r.engine().lstm_cell_backward(view(pi), view(ph), view(pc), r.g.view(), r.needs(0) ? di.view() : TensorView{},
                                  r.needs(1) ? dh.view() : TensorView{}, r.needs(2) ? dc.view() : TensorView{});
  if (r.needs(0)) r.out[0] = std::move(di);
  if (r.needs(1)) r.out[1] = std::move(dh);
  if (r.needs(2)) r.out[2] = std::move(dc);
}

// out += a × b: the engine's fused kernel where it has one, else a product
// into `tmp` (made on first use, shaped like out) and an add.
void matmul_into(ops::Engine& e, const TensorView& a, const TensorView& b, const TensorView& out, Scratch& tmp,
                 Device d) {
  if (e.matmul_add(a, b, out)) return;
  if (!tmp) tmp = Scratch(shape_of(out), out.dtype, d);
  e.matmul(a, b, tmp.view());
  e.binary(Binary::add, out, tmp.view(), out);
}

// Note [One array for a layer's sequence] in ops/lstm_sequence.hpp,
// backwards. g, the sequence's gradient [T, 6, B, H], is consumed: walking
// from the last step down, rows 0 and 1 of step t hold {dh_t, dc_t} once
// step t + 1 has added what it carries into them; the fused cell's backward
// writes the gate gradient dA_t over rows 2 to 5 and dc_{t-1}; then
// dP[:, t] = dA_t, dW_hh += h_{t-1}ᵀ dA_t and dh_{t-1} += dA_t W_hhᵀ. Step 0
// writes into the initial state's gradient, or nowhere without one.
void lstm_layer_rule(Rule& r) {
  Pinned pp = r.input(0), pw = r.input(1), pseq(r.node.output, "backward");
  std::optional<Pinned> ps;
  if (r.node.size() > 2) ps.emplace(r.input(2));
  const ops::lstm::Sequence s{pp->shape[0], pp->shape[1], pw->shape[0]};
  const DataType dt = pp->dtype;
  const bool need_state = r.needs(2);
  if (pseq->shape.size() == 0) {
    if (r.needs(0)) r.out[0] = full(pp->shape, dt, r.device(), 0);
    if (r.needs(1)) r.out[1] = full(pw->shape, dt, r.device(), 0);
    if (need_state) r.out[2] = full((*ps)->shape, dt, r.device(), 0);
    return;
  }
  Scratch dp, dw, ds, dc, tmp_h, tmp_w;
  if (r.needs(0)) dp = Scratch(pp->shape, dt, r.device());
  if (r.needs(1)) dw = full(pw->shape, dt, r.device(), 0);
  if (need_state) ds = Scratch((*ps)->shape, dt, r.device());
  dc = Scratch(Shape{s.batch, s.hidden}, dt, r.device());
  ops::Engine& e = r.engine();
  const TensorView g = r.g.view(), seq = view(pseq), p = view(pp), wt = swap_last(view(pw));
  for (std::int64_t t = s.steps - 1; t >= 0; --t) {
    const TensorView gates = s.hidden_gates(seq, t), da = s.hidden_gates(g, t);
    TensorView c_prev, h_prev{}, dh_prev{}, dc_prev{};
    if (t > 0) {
      c_prev = s.c(seq, t - 1), h_prev = s.h(seq, t - 1), dh_prev = s.h(g, t - 1), dc_prev = s.c(g, t - 1);
    } else if (ps) {
      const TensorView s0 = view(*ps);
      c_prev = s.initial(s0, 1), h_prev = s.initial(s0, 0);
      if (need_state) dh_prev = s.initial(ds.view(), 0), dc_prev = s.initial(ds.view(), 1);
    } else {
      c_prev = s.leading_state(gates);  // zeros
    }
    // Step 0 writes the initial state's fresh gradient; later steps add into the carried one.
    e.lstm_cell_backward(s.input_gates(p, t), gates, c_prev, s.state(g, t), TensorView{}, da,
                         t > 0 ? dc.view() : dc_prev);
    if (t > 0) e.binary(Binary::add, dc_prev, dc.view(), dc_prev);
    if (r.needs(0)) e.copy(da, s.input_gates(dp.view(), t));
    if (r.needs(1) && h_prev.data) matmul_into(e, swap_last(h_prev), da, dw.view(), tmp_w, r.device());
    if (t > 0) matmul_into(e, da, wt, dh_prev, tmp_h, r.device());
    else if (dh_prev.data) e.matmul(da, wt, dh_prev);
  }
  if (r.needs(0)) r.out[0] = std::move(dp);
  if (r.needs(1)) r.out[1] = std::move(dw);
  if (need_state) r.out[2] = std::move(ds);
}

}  // namespace

void layer_gradients(Rule& r) {
  switch (r.node.op.kind) {
    case OpKind::conv2d: conv2d_rule(r); break;
    case OpKind::max_pool2d: pool2d_rule(r, true); break;
    case OpKind::avg_pool2d: pool2d_rule(r, false); break;
    case OpKind::gelu: gelu_rule(r); break;
    case OpKind::dropout: dropout_rule(r); break;
    case OpKind::embedding: embedding_rule(r); break;
    case OpKind::layer_norm: layer_norm_rule(r); break;
    case OpKind::batch_norm: batch_norm_rule(r); break;
    case OpKind::lstm_cell: lstm_cell_rule(r); break;
    case OpKind::lstm_layer: lstm_layer_rule(r); break;
    default: NDGC_ASSERT(false, "layer_gradients: a node of an op kind that has no layer rule (no gradient would flow)");
  }
}

}  // namespace ndgc::autograd::detail
