// Gradient rules: for each kind of recorded op, the gradients of its inputs
// from the gradient of its output (vector-Jacobian products).
//
// Inputs that were broadcast get their gradient summed back to their own
// shape (sum_to). Rules read the saved inputs and output through pins, so an
// array closed since it was recorded raises ArrayClosed naming it. Rules
// compute only the gradients asked for (an input of the batch data needs
// none: for x.matmul(w) only d/dw is computed). Ties have a documented
// choice: maximum/minimum send the gradient to the first operand on a tie
// (x >= y), max/min reductions share it equally among the tied elements,
// abs has gradient 0 at 0, relu 0 at 0.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <vector>

#include "autograd/scratch.hpp"
#include "autograd/tape.hpp"

namespace ndgc::autograd::detail {

// `out` gets one entry per input of `node`: its gradient (shape and dtype of
// that input) where node.source(i) asks for one, empty elsewhere. A rule may
// instead add a leaf's gradient straight into its gradient array (a matmul
// with a fused GEMM accumulate) and leave its entry empty. `g`, the
// gradient of the node's output, is consumed. `detail` is the node's OpDetail
// from the tape's side table, or null when it has none.
void input_gradients(const Node& node, const ops::OpDetail* detail, Scratch g, std::vector<Scratch>& out);

}  // namespace ndgc::autograd::detail
