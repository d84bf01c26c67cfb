// lstm_cell: one fused LSTM step, from the gates' two halves and c to h' and c'.
//
// Note [One output for two states]
// A step produces two arrays, h' and c', but a tape node has one output
// (autograd/tape.hpp). Rather than teach the tape about several outputs, the
// cell writes both into one [2, B, H] array, h' first; the states are its
// views out.get(0) and out.get(1), both contiguous. Autograd sees two get
// nodes feeding one lstm_cell node: their gradients land in the halves of
// one [2, B, H] gradient, which is what the fused backward kernel reads.
// The gates arrive in two halves, x_t W_ih + b and h W_hh, added inside the
// kernel rather than by a separate [B, 4H] op; their gradients are the same
// values, which the backward kernel writes to both.
#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/lstm.hpp"
#include "ops/layer_support.hpp"
#include "ops/autocast.hpp"
#include "ops/record.hpp"

namespace ndgc {

using namespace ndgc::ops;

NDArray lstm_cell(const NDArray& input_gates, const NDArray& hidden_gates, const NDArray& c, Site site) {
  if (autocast::lowers({&input_gates, &hidden_gates, &c}))
    return ndgc::lstm_cell(autocast::lower(input_gates, input_gates, site), autocast::lower(hidden_gates, input_gates, site),
                     autocast::lower(c, input_gates, site), site);
  detail::enter();
  const char* op = "lstm_cell";
  Pinned pi(input_gates, op), ph(hidden_gates, op), pc(c, op);
  check_floating(op, *pi);
  check_same_dtype(op, *pi, *ph);
  check_same_dtype(op, *pi, *pc);
  check_same_device(op, *pi, *ph);
  check_same_device(op, *pi, *pc);
  check_rank(op, "c", *pc, 2, "[B, H]");
  check_rank(op, "input_gates", *pi, 2, "[B, 4H]");
  check_rank(op, "hidden_gates", *ph, 2, "[B, 4H]");
  const std::int64_t b = pc->shape[0], h = pc->shape[1];
  for (const auto* g : {&pi, &ph})
    if (!((*g)->shape == Shape{b, 4 * h}))
      throw ShapeMismatch(fmt::format("{}: {} {} must be [B, 4H] = [{}, {}] for the cell state c {} ([B, H])", op,
                                      g == &pi ? "input_gates" : "hidden_gates", describe(**g), b, 4 * h,
                                      describe(*pc)));
  check_layer_kernels(op, pi->device);

  auto out = new_output(Shape{2, b, h}, pi->dtype, pi->device, site, op);
  if (out->size() > 0) engine(pi->device).lstm_cell(view_of(*pi), view_of(*ph), view_of(*pc), view_of(*out));
  NDArray result = publish_like(std::move(out), *pi, op);
  record({.kind = OpKind::lstm_cell}, {input_gates, hidden_gates, c}, result);
  return result;
}

}  // namespace ndgc
