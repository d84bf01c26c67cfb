// The backward pass: walk the tape from the target down, pass each node's
// gradient to its inputs, add leaves' gradients into their gradient arrays.
//
// Each node's gradient is a Scratch (scratch.hpp) that lives from the moment
// its first consumer produces it until its node has been processed, so at
// any time only the gradients of the "frontier" are held. Nodes after the
// target and nodes the target does not depend on are skipped (their gradient
// never appears). Recording is paused for the whole pass.
//
// Note [Gradient ready]
// Data-parallel training overlaps the gradients' all-reduce with the rest of
// backward (PyTorch DDP registers an autograd hook per parameter and launches
// a bucket once all of its gradients are in). Here the caller names the
// arrays to watch; before the walk, each watched array's uses as a leaf
// input among nodes 0..root are counted (a shared weight has several). The
// walk visits every node of that range once, from the root down, and drops a
// node's uses when it is done with it: after adding its gradients, or at
// once when the target does not depend on it (its slot is empty, so it adds
// nothing). A count reaching zero means no later node can add to that
// gradient: `ready` is called then. Arrays that never reach zero that way
// (not on the tape) are reported when the walk ends. Lookup is a binary
// search over the watched keys (a handle's key is the array's identity), so
// a step costs O(uses · log watched) and two small vectors, and nothing when
// no one watches.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "autograd/gradient_state.hpp"
#include "autograd/rules.hpp"
#include "autograd/tape.hpp"
#include "core/reclaim_queue.hpp"
#include "core/registry.hpp"
#include "ndgc/error.hpp"
#include "ops/op_support.hpp"
#include "support/scope_exit.hpp"

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

// See Note [Gradient ready].
class ReadyCounter {
 public:
  ReadyCounter(const ReadyHook& hook, const std::vector<Node>& nodes, std::int32_t root) : hook_(hook) {
    const NDList& watched = *hook.watched;
    keys_.reserve(watched.size());
    for (std::size_t i = 0; i < watched.size(); ++i) keys_.push_back({watched[i].key(), i});
    std::sort(keys_.begin(), keys_.end());
    remaining_.assign(watched.size(), 0);
    fired_.assign(watched.size(), false);
    for (std::int32_t n = 0; n <= root; ++n) each_leaf(nodes[std::size_t(n)], [&](std::size_t i) { ++remaining_[i]; });
  }

  // `node` has added all it will: its watched leaves lose one use each.
  void done_with(const Node& node) {
    each_leaf(node, [&](std::size_t i) {
      if (--remaining_[i] == 0) fire(i);
    });
  }

  // The arrays no node fed, in index order.
  void finish() {
    for (std::size_t i = 0; i < fired_.size(); ++i)
      if (!fired_[i]) fire(i);
  }

 private:
  void fire(std::size_t i) {
    fired_[i] = true;
    (*hook_.ready)(i);
  }

  template <class F>
  void each_leaf(const Node& node, F&& f) const {
    for (std::size_t j = 0; j < node.size(); ++j) {
      if (node.source(j) != kLeaf) continue;
      const void* key = node.input(j).key();
      auto it = std::lower_bound(keys_.begin(), keys_.end(), std::pair<const void*, std::size_t>{key, 0});
      for (; it != keys_.end() && it->first == key; ++it) f(it->second);
    }
  }

  const ReadyHook& hook_;
  std::vector<std::pair<const void*, std::size_t>> keys_;
  std::vector<std::int32_t> remaining_;
  std::vector<bool> fired_;
};

}  // namespace

void Tape::backward(const NDArray& target, const ReadyHook* hook) {
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
      if (hook) ReadyCounter(*hook, nodes_, -1).finish();
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
  support::ScopeExit empty{[&] {
    grads.clear();
    inputs.clear();
  }};
  grads.clear();
  grads.resize(std::size_t(root) + 1);
  grads[std::size_t(root)] = std::move(seed);
  inputs.clear();
  std::optional<ReadyCounter> counter;
  if (hook) counter.emplace(*hook, nodes_, root);
  for (std::int32_t i = root; i >= 0; --i) {
    Scratch& slot = grads[std::size_t(i)];
    if (!slot) {
      if (counter) counter->done_with(nodes_[std::size_t(i)]);
      continue;
    }
    const Node& node = nodes_[std::size_t(i)];
    // An intermediate result that requires a gradient of its own gets it too.
    if (gradient_of(node.output).defined()) accumulate_leaf(node.output, slot);
    const ops::OpDetail* detail = node.detail() == Node::kNoDetail ? nullptr : &details_[std::size_t(node.detail())];
    input_gradients(node, detail, std::move(slot), inputs);
    slot = Scratch();
    for (std::size_t j = 0; j < inputs.size(); ++j) {
      if (!inputs[j]) continue;
      const std::int32_t source = node.source(j);
      if (source >= 0) accumulate(grads[std::size_t(source)], std::move(inputs[j]));
      else if (source == kLeaf) accumulate_leaf(node.input(j), inputs[j]);
    }
    inputs.clear();
    if (counter) counter->done_with(node);
  }
  if (counter) counter->finish();
}

}  // namespace ndgc::autograd::detail
