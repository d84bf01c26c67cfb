// What a gradient rule works with (rules.cpp and layer_rules.cpp): one tape
// node, its OpDetail when it has one (Note [A lean record] in
// ops/record.hpp), the gradient of its output, and one slot per input for the
// inputs' gradients. input_gradients() builds one per node.
#pragma once

#include <variant>
#include <vector>

#include "autograd/scratch.hpp"
#include "autograd/tape.hpp"
#include "core/registry.hpp"
#include "support/assert.hpp"

namespace ndgc::autograd::detail {

struct Rule {
  const Node& node;
  const ops::OpDetail* op_detail;  // the node's, or null
  Scratch g;                       // the output's gradient; a rule may take it over
  std::vector<Scratch>& out;       // node.size() entries, empty until a rule fills one

  bool needs(std::size_t i) const { return i < node.size() && node.source(i) != kNoGradient; }
  ndgc::detail::Pinned input(std::size_t i) const { return ndgc::detail::Pinned(node.input(i), "backward"); }
  ndgc::detail::Pinned output() const { return ndgc::detail::Pinned(node.output, "backward"); }
  Device device() const { return g.device(); }
  ops::Engine& engine() const { return g.engine(); }
  Scratch zero() const { return full(Shape{}, g.dtype(), g.device(), 0); }

  // The detail the node's op recorded: a permute's axes, get's index, a window, a stream.
  template <class T>
  const T& detail() const {
    const T* d = op_detail ? std::get_if<T>(op_detail) : nullptr;
    NDGC_ASSERT(d != nullptr, "a gradient rule read an OpDetail that its op did not record");
    return *d;
  }
};

}  // namespace ndgc::autograd::detail
