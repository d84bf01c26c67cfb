// Gradient rules of the layer ops (issue 27): conv2d, the pools, GELU,
// dropout, embedding, layer_norm, batch_norm, lstm_cell and lstm_layer. See rules.hpp
// for the contract; rules.cpp dispatches here.
#pragma once

#include <vector>

#include "autograd/scratch.hpp"
#include "autograd/tape.hpp"

namespace ndgc::autograd::detail {

// Fills `out` (already sized to node.size()) for a node of a layer op kind;
// any other kind is a broken invariant (NDGC_ASSERT).
void layer_gradients(const Node& node, Scratch& g, std::vector<Scratch>& out);

}  // namespace ndgc::autograd::detail
