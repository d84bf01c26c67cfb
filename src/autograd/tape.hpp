// The tape: what a GradientCollector recorded, in the order it happened.
//
// Each Node is one op whose inputs reach an array that requires a gradient:
// the OpRecord (ops/record.hpp), handles to the inputs and the output (so
// auto-close cannot free them before backward, DESIGN.md §3), and for each
// input where its gradient goes: the node that produced it, a leaf (an array
// that requires a gradient), or nowhere. Recording order is a topological
// order, so backward walks the nodes once, from the target down.
//
// Note [Tracked arrays]
// An op is recorded when one of its inputs is tracked: the output of a node
// on this tape (found through `producer_`, keyed by the input's Key, which
// the tape's own handle keeps from being reused) or an array that requires a
// gradient (its GradientState, read under a short pin). Outputs that are not
// floating are never recorded: integer and boolean results cut the graph.
//
// Thread-safety: a tape belongs to one thread. The recorder hook reaches the
// recording thread's tape through a thread_local pointer, so other threads'
// ops never touch it; a NoGradient on that thread pauses it.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "ndgc/ndarray.hpp"
#include "ops/record.hpp"

namespace ndgc::autograd::detail {

inline constexpr std::int32_t kNoGradient = -1;  // the input needs no gradient
inline constexpr std::int32_t kLeaf = -2;        // the input requires a gradient of its own

struct Node {
  ops::OpRecord op;
  std::vector<NDArray> inputs;
  std::vector<std::int32_t> sources;  // per input: producing node, kLeaf or kNoGradient
  NDArray output;
};

class Tape {
 public:
  Tape();
  ~Tape();
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  void record(const ops::OpRecord& op, std::span<const NDArray> inputs, const NDArray& output);
  void backward(const NDArray& target);  // backward.cpp
  std::size_t size() const noexcept { return nodes_.size(); }

  // The recording tape of this thread, or null (none, or paused).
  static Tape* current() noexcept;
  static bool paused() noexcept;
  static void set_paused(bool paused) noexcept;

 private:
  std::int32_t producer(const NDArray& array) const noexcept;

  std::vector<Node> nodes_;
  std::unordered_map<const void*, std::int32_t> producer_;  // output key → node
};

// Installs the ops layer's recorder (once per process).
void install_recorder();

}  // namespace ndgc::autograd::detail
