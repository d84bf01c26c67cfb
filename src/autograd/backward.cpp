// The backward pass: walk the tape from the target down, pass each node's
// gradient to its inputs, add leaves' gradients into their gradient arrays.
//
// Each node's gradient is a Scratch (scratch.hpp) that lives from the moment
// its first consumer produces it until its node has been processed, so at
// any time only the gradients of the "frontier" are held. Nodes after the
// target and nodes the target does not depend on are skipped (their gradient
// never appears). Recording is paused for the whole pass.
#include <fmt/format.h>

#include "autograd/gradient_state.hpp"
#include "autograd/rules.hpp"
#include "autograd/tape.hpp"
#include "core/reclaim_queue.hpp"
#include "core/registry.hpp"
#include "ndgc/error.hpp"
#include "ops/op_support.hpp"

namespace ndgc::autograd::detail {
namespace {

using ndgc::detail::Pinned;

class PauseRecording {
 public:
  PauseRecording() : was_(Tape::paused()) { Tape::set_paused(true); }
  ~PauseRecording() { Tape::set_paused(was_); }

 private:
  bool was_;
};

// gradient += g, for an array that requires a gradient. An array whose
// gradient was switched off since it was recorded is skipped.
void accumulate_leaf(const NDArray& array, const Scratch& g) {
  NDArray gradient = gradient_of(array);
  if (!gradient.defined()) {
    Pinned still_open(array, "backward");  // ArrayClosed if it was closed
    return;
  }
  Pinned target(gradient, "backward");
  if (target->shape.size() == 0) return;
  ops::TensorView t = ops::view_of(*target);
  g.engine().binary(Binary::add, t, g.view(), t);
}

void accumulate(Scratch& into, Scratch g) {
  if (!into) into = std::move(g);
  else binary_into(Binary::add, into, g.view());
}

}  // namespace

void Tape::backward(const NDArray& target) {
  ndgc::detail::enter();
  PauseRecording pause;
  Pinned t(target, "backward");
  if (!is_floating(t->dtype))
    throw DTypeMismatch(fmt::format("backward: the target {} is {}; only floating results have gradients",
                                    ops::describe(*t), to_string(t->dtype)));
  Scratch seed = full(t->shape, t->dtype, t->device, 1);
  const std::int32_t root = producer(target);
  if (root == kNoGradient) {
    if (gradient_of(*t).defined()) {  // the target is itself a leaf
      accumulate_leaf(target, seed);
      return;
    }
    throw InvalidArgument(fmt::format(
        "backward: {} was not computed, inside this GradientCollector, from an array that requires a "
        "gradient; call set_requires_gradient(true) on the parameters before the forward pass, and create "
        "the collector before it",
        ops::describe(*t)));
  }
  // The tape's kept buffers (Note [Recording cost]), emptied again however this ends.
  std::vector<Scratch>& grads = buffers_.grads;
  std::vector<Scratch>& inputs = buffers_.inputs;
  struct Empty {
    std::vector<Scratch>& a;
    std::vector<Scratch>& b;
    ~Empty() {
      a.clear();
      b.clear();
    }
  } empty{grads, inputs};
  grads.clear();
  grads.resize(std::size_t(root) + 1);
  grads[std::size_t(root)] = std::move(seed);
  inputs.clear();
  for (std::int32_t i = root; i >= 0; --i) {
    Scratch& slot = grads[std::size_t(i)];
    if (!slot) continue;
    const Node& node = nodes_[std::size_t(i)];
    // An intermediate result that requires a gradient of its own gets it too.
    if (gradient_of(node.output).defined()) accumulate_leaf(node.output, slot);
    input_gradients(node, std::move(slot), inputs);
    slot = Scratch();
    for (std::size_t j = 0; j < inputs.size(); ++j) {
      if (!inputs[j]) continue;
      const std::int32_t source = node.source(j);
      if (source >= 0) accumulate(grads[std::size_t(source)], std::move(inputs[j]));
      else if (source == kLeaf) accumulate_leaf(node.input(j), inputs[j]);
    }
    inputs.clear();
  }
}

}  // namespace ndgc::autograd::detail
