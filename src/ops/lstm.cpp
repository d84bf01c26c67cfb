// lstm: a multi-layer LSTM composed of recorded ops, as PyTorch runs it.
//
// Per layer: one GEMM (linear) projects every step's input at once,
// [B·T, F_l] x [F_l, 4H] + bias; then each step t is the [B, H] x [H, 4H]
// GEMM of the previous h and one fused lstm_cell over the projection's slice
// t. A step's h and c are views of the cell's output (Note [One output for
// two states] in ops/lstm_cell.cpp); y is the stack of the last layer's h.
// Without h0 (or c0) the first step's state is zero: its hidden gates are a
// zero [B, 4H] array, not a GEMM of zeros.
//
// Everything is checked before the first op runs, so a call that fails its
// checks leaves no array behind. The intermediates (projections, per-step
// gates and states) are ordinary arrays of x's manager, as for any
// composition: a step's batch manager or workspace owns them.
//
// Note [Backward through the step slices]
// The projection's slice t is a get view; get's backward pass writes its
// gradient into a zero array of the whole projection's shape, so the backward
// pass touches B·T·4H elements per step (T² over the sequence) where a fused
// sequence op would touch B·4H. Fine at the sizes the tests and the demo use;
// a sequence-level rule is the remedy when it shows up in a profile.
#include <string_view>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/lstm.hpp"
#include "ops/layer_support.hpp"

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

NDList lstm(const NDArray& x, const NDList& weights, const NDArray& h0, const NDArray& c0, Site site) {
  detail::enter();
  const LstmShape s = check_lstm("lstm", x, weights, h0, c0);
  const std::int64_t gates = 4 * s.hidden;
  NDArray zero_gates, zero_state;
  if (!h0.defined()) zero_gates = x.manager().zeros(Shape{s.batch, gates}, x.dtype(), site);
  if (!c0.defined()) zero_state = x.manager().zeros(Shape{s.batch, s.hidden}, x.dtype(), site);

  NDArray input = x;
  NDList last_h, last_c;
  for (std::int64_t l = 0; l < s.layers; ++l) {
    const NDArray& w_ih = weights[std::size_t(3 * l)];
    const NDArray& w_hh = weights[std::size_t(3 * l + 1)];
    const NDArray& bias = weights[std::size_t(3 * l + 2)];
    const std::int64_t in = input.shape()[2];
    const NDArray projection = linear(input.reshape(Shape{s.batch * s.steps, in}, site), w_ih, bias, site)
                                   .reshape(Shape{s.batch, s.steps, gates}, site);
    NDArray h = h0.defined() ? h0.get(NDIndex().add_index(l), site) : NDArray{};
    NDArray c = c0.defined() ? c0.get(NDIndex().add_index(l), site) : zero_state;
    NDList outputs;
    for (std::int64_t t = 0; t < s.steps; ++t) {
      const NDArray input_gates = projection.get(NDIndex().add_all().add_index(t), site);
      const NDArray hidden_gates = h.defined() ? h.matmul(w_hh, site) : zero_gates;
      const NDArray state = lstm_cell(input_gates, hidden_gates, c, site);
      h = state.get(NDIndex().add_index(0), site);
      c = state.get(NDIndex().add_index(1), site);
      outputs.push_back(h);
    }
    input = stack(outputs, 1, site);
    last_h.push_back(h);
    last_c.push_back(c);
  }
  return NDList{input, stack(last_h, 0, site), stack(last_c, 0, site)};
}

}  // namespace ndgc
