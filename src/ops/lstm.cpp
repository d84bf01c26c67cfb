// lstm: a multi-layer LSTM, as PyTorch runs it.
//
// Per layer: one GEMM (linear) projects every step's input at once,
// [B·T, F_l] x [F_l, 4H] + bias; then one recorded op, lstm_layer, runs the
// steps: each is the [B, H] x [H, 4H] GEMM of the previous h and one fused
// lstm_cell kernel, writing into one [T, 6, B, H] array (Note [One array for
// a layer's sequence] in ops/lstm_sequence.hpp). y is a view of its h rows,
// the final h and c views of its last step; a next layer's input is y copied
// contiguous by its reshape. Its gradient rule (autograd/layer_rules.cpp)
// walks the steps backwards the same way, touching B·4H elements per step.
//
// Everything is checked before the first op runs, so a call that fails its
// checks leaves no array behind. The intermediates (projections, sequences)
// are ordinary arrays of x's manager, as for any composition: a step's batch
// manager or workspace owns them.
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/lstm.hpp"
#include "ops/layer_support.hpp"
#include "ops/lstm_sequence.hpp"
#include "ops/autocast.hpp"
#include "ops/record.hpp"

namespace ndgc {

using namespace ndgc::ops;

namespace {

struct LstmShape {
  std::int64_t batch, steps, features, hidden, layers;
};

void check_state(const char* op, const char* name, const NDArray& state, const ArrayImpl& x, const LstmShape& s) {
  if (!state.defined()) return;
  Pinned p(state, op);
  check_same_dtype(op, x, *p);
  check_same_device(op, x, *p);
  if (!(p->shape == Shape{s.layers, s.batch, s.hidden}))
    throw ShapeMismatch(fmt::format("{}: {} {} must be [L, B, H] = [{}, {}, {}] ({} layers, x {}, hidden size {})", op,
                                    name, describe(*p), s.layers, s.batch, s.hidden, s.layers, describe(x), s.hidden));
}

// Every check of lstm(), before anything is computed.
LstmShape check_lstm(const char* op, const NDArray& x, const NDList& weights, const NDArray& h0, const NDArray& c0) {
  Pinned px(x, op);
  check_floating(op, *px);
  check_rank(op, "x", *px, 3, "[B, T, F]");
  if (weights.empty() || weights.size() % 3 != 0)
    throw InvalidArgument(fmt::format("{}: weights holds {} arrays, but needs 3 per layer (weight_ih, weight_hh, "
                                      "bias)",
                                      op, weights.size()));
  LstmShape s{px->shape[0], px->shape[1], px->shape[2], 0, std::int64_t(weights.size() / 3)};
  if (s.steps == 0) throw InvalidArgument(fmt::format("{}: x {} has no time steps (T = 0)", op, describe(*px)));
  for (std::int64_t l = 0; l < s.layers; ++l) {
    Pinned pih(weights[std::size_t(3 * l)], op), phh(weights[std::size_t(3 * l + 1)], op),
        pb(weights[std::size_t(3 * l + 2)], op);
    for (const Pinned* w : {&pih, &phh, &pb}) {
      check_same_dtype(op, *px, **w);
      check_same_device(op, *px, **w);
    }
    // Names for the messages, formatted in place: the success path allocates nothing.
    char ih_text[40], hh_text[40];
    *fmt::format_to_n(ih_text, sizeof ih_text - 1, "layer {}'s weight_ih", l).out = '\0';
    *fmt::format_to_n(hh_text, sizeof hh_text - 1, "layer {}'s weight_hh", l).out = '\0';
    const std::string_view ih = ih_text, hh = hh_text;
    check_rank(op, hh_text, *phh, 2, "[H, 4H]");
    if (l == 0) s.hidden = phh->shape[0];
    if (!(phh->shape == Shape{s.hidden, 4 * s.hidden}))
      throw ShapeMismatch(fmt::format("{}: {} {} must be [H, 4H] = [{}, {}] (H = {}, the rows of layer 0's "
                                      "weight_hh)",
                                      op, hh, describe(*phh), s.hidden, 4 * s.hidden, s.hidden));
    check_rank(op, ih_text, *pih, 2, "[F, 4H]");
    const std::int64_t in = l == 0 ? s.features : s.hidden;
    if (!(pih->shape == Shape{in, 4 * s.hidden})) {
      if (l == 0)
        throw ShapeMismatch(fmt::format("{}: x {} has F = {} features, but {} {} must be [F, 4H] = [{}, {}]", op,
                                        describe(*px), s.features, ih, describe(*pih), in, 4 * s.hidden));
      throw ShapeMismatch(fmt::format("{}: {} {} must be [H, 4H] = [{}, {}]: its input is layer {}'s h", op, ih,
                                      describe(*pih), in, 4 * s.hidden, l - 1));
    }
    if (!(pb->shape == Shape{4 * s.hidden}))
      throw ShapeMismatch(fmt::format("{}: layer {}'s bias {} must be [4H] = [{}]", op, l, describe(*pb),
                                      4 * s.hidden));
  }
  check_state(op, "h0", h0, *px, s);
  check_state(op, "c0", c0, *px, s);
  check_layer_kernels(op, px->device);
  return s;
}

}  // namespace

namespace {

// One layer over the whole sequence: projection [B, T, 4H] (x W_ih + b),
// w_hh [H, 4H], state0 [2, B, H] = {h0, c0} or NDArray{} for zeros →
// [T, 6, B, H]. Only lstm() below calls it, after its checks.
NDArray lstm_layer(const NDArray& projection, const NDArray& w_hh, const NDArray& state0, Site site) {
  const char* op = "lstm";
  Pinned pp(projection, op), pw(w_hh, op);
  std::optional<Pinned> ps;
  if (state0.defined()) ps.emplace(state0, op);
  const lstm::Sequence s{pp->shape[0], pp->shape[1], pw->shape[0]};
  auto out = new_output(s.shape(), pp->dtype, pp->device, site, op);
  if (out->size() > 0) {
    Engine& e = engine(pp->device);
    const TensorView seq = contiguous_view(out->data(), pp->dtype, s.shape()), p = view_of(*pp), w = view_of(*pw);
    for (std::int64_t t = 0; t < s.steps; ++t) {
      const TensorView gates = s.hidden_gates(seq, t);
      TensorView c;
      if (t > 0) {
        e.matmul(s.h(seq, t - 1), w, gates);
        c = s.c(seq, t - 1);
      } else if (ps) {
        const TensorView s0 = view_of(**ps);
        e.matmul(s.initial(s0, 0), w, gates);
        c = s.initial(s0, 1);
      } else {
        e.fill(gates, 0);
        c = s.leading_state(gates);
      }
      e.lstm_cell(s.input_gates(p, t), gates, c, s.state(seq, t));
    }
  }
  NDArray result = publish_like(std::move(out), *pp, op);
  if (ps) record({.kind = OpKind::lstm_layer}, {projection, w_hh, state0}, result);
  else record({.kind = OpKind::lstm_layer}, {projection, w_hh}, result);
  return result;
}

}  // namespace

NDList lstm(const NDArray& x, const NDList& weights, const NDArray& h0, const NDArray& c0, Site site) {
  if (Autocast::active() != DataType::float32) {  // all operands to the region's dtype, once for every step
    bool any = autocast::lowers({&x, &h0, &c0});
    for (const NDArray& w : weights) any = any || autocast::lowers({&w});
    if (any) {
      NDList lowered;
      for (const NDArray& w : weights) lowered.push_back(autocast::lower(w, x, site));
      return ndgc::lstm(autocast::lower(x, x, site), lowered, autocast::lower(h0, x, site), autocast::lower(c0, x, site),
                  site);
    }
  }
  detail::enter();
  const LstmShape s = check_lstm("lstm", x, weights, h0, c0);
  const std::int64_t gates = 4 * s.hidden;
  NDArray zero_state;
  if (h0.defined() != c0.defined()) zero_state = x.manager().zeros(Shape{s.batch, s.hidden}, x.dtype(), site);

  NDArray input = x;
  NDList last_h, last_c;
  for (std::int64_t l = 0; l < s.layers; ++l) {
    const NDArray& w_ih = weights[std::size_t(3 * l)];
    const NDArray& w_hh = weights[std::size_t(3 * l + 1)];
    const NDArray& bias = weights[std::size_t(3 * l + 2)];
    const std::int64_t in = input.shape()[2];
    const NDArray projection = linear(input.reshape(Shape{s.batch * s.steps, in}, site), w_ih, bias, site)
                                   .reshape(Shape{s.batch, s.steps, gates}, site);
    NDArray state0;
    if (h0.defined() || c0.defined())
      state0 = stack(NDList{h0.defined() ? h0.get(NDIndex().add_index(l), site) : zero_state,
                            c0.defined() ? c0.get(NDIndex().add_index(l), site) : zero_state},
                     0, site);
    const NDArray sequence = lstm_layer(projection, w_hh, state0, site);
    input = sequence.get(NDIndex().add_all().add_index(0), site).swap_axes(0, 1, site);  // [B, T, H]
    last_h.push_back(sequence.get(NDIndex().add_index(s.steps - 1).add_index(0), site));
    last_c.push_back(sequence.get(NDIndex().add_index(s.steps - 1).add_index(1), site));
  }
  return NDList{input, stack(last_h, 0, site), stack(last_c, 0, site)};
}

}  // namespace ndgc
