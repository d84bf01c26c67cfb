// Gradient rules of the layer ops (issue 27): conv2d, the pools, GELU,
// dropout, embedding, layer_norm, batch_norm, lstm_cell and lstm_layer. See rules.hpp
// for the contract; rules.cpp dispatches here.
#pragma once

#include <vector>

#include "autograd/rule.hpp"

namespace ndgc::autograd::detail {

// Fills r.out for a node of a layer op kind; any other kind is a broken
// invariant (NDGC_ASSERT).
void layer_gradients(Rule& r);

}  // namespace ndgc::autograd::detail
