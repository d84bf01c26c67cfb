// The tape: what a GradientCollector recorded, in the order it happened.
//
// Each Node is one op whose inputs reach an array that requires a gradient:
// the OpRecord (ops/record.hpp), the index of its OpDetail in the tape's side
// table when it has one (Note [A lean record]), handles to the inputs and the output (so
// auto-close cannot free them before backward, docs/design.md §3), and for each
// input where its gradient goes: the node that produced it, a leaf (an array
// that requires a gradient), or nowhere. Recording order is a topological
// order, so backward walks the nodes once, from the target down.
//
// Note [Tracked arrays]
// An op is recorded when one of its inputs is tracked: the output of a node
// on this tape (found in `producer_`, keyed by the input's Key, which the
// tape's own handle keeps from being freed and reused) or an array that
// requires a gradient (its GradientState, read under a short pin). Outputs
// that are not floating are never recorded: integer and boolean results cut
// the graph.
//
// Note [Recording cost]
// Recording runs inside every differentiable op while a collector lives, so
// it avoids allocation per op: up to three inputs are stored inline in the
// node (concat/stack of more spill to a vector), and `producer_` is an
// open-addressing table of (key, node) pairs that only allocates when it
// doubles, and nodes are reserved in batches. A training loop makes one tape
// per step, so a tape's buffers (nodes, the table, backward's gradient
// slots) outlive it: the ending tape leaves them, emptied, to the next tape
// on its thread, and a steady-state step allocates none of them (issue 16).
// The Tape object itself comes from a free list (support/free_list.hpp).
//
// Thread-safety: a tape belongs to one thread. The recorder hook reaches the
// recording thread's tape through a thread_local pointer, so other threads'
// ops never touch it; a NoGradient on that thread pauses it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "autograd/scratch.hpp"
#include "ndgc/ndarray.hpp"
#include "ndgc/ndlist.hpp"
#include "ops/record.hpp"

namespace ndgc::autograd::detail {

inline constexpr std::int32_t kNoGradient = -1;  // the input needs no gradient
inline constexpr std::int32_t kLeaf = -2;        // the input requires a gradient of its own

class Node {
 public:
  static constexpr std::size_t kInline = 3;
  static constexpr std::int32_t kNoDetail = -1;
  Node(const ops::OpRecord& op, std::span<const NDArray> inputs, const std::int32_t* sources, const NDArray& output,
       std::int32_t detail = kNoDetail);

  ops::OpRecord op;
  NDArray output;
  std::size_t size() const noexcept { return count_; }
  const NDArray& input(std::size_t i) const noexcept { return i < kInline ? inputs_[i] : more_[i - kInline].input; }
  std::int32_t source(std::size_t i) const noexcept { return i < kInline ? sources_[i] : more_[i - kInline].source; }
  // Index of the node's OpDetail in TapeBuffers::details, or kNoDetail.
  std::int32_t detail() const noexcept { return detail_; }

 private:
  struct Spilled {  // an input past the third (concat and stack of many)
    NDArray input;
    std::int32_t source;
  };
  NDArray inputs_[kInline];
  std::int32_t sources_[kInline] = {kNoGradient, kNoGradient, kNoGradient};
  std::int32_t detail_;
  std::uint32_t count_;
  std::vector<Spilled> more_;
};

// What a tape allocates, kept for the next tape on the thread (Note
// [Recording cost]). Empty (no handle, no scratch) whenever no tape uses it.
struct TapeBuffers {
  struct Slot {
    const void* key = nullptr;
    std::int32_t node = kNoGradient;
  };
  std::vector<Node> nodes;
  std::vector<ops::OpDetail> details;  // the nodes' OpDetails (Note [A lean record])
  std::vector<Slot> producer;          // open addressing, power-of-two size, at most half full
  std::vector<Scratch> grads, inputs;  // backward's per-node gradients and one node's input gradients
};

// GradientCollector::backward's watch: which arrays, and whom to tell.
struct ReadyHook {
  const NDList* watched;
  const std::function<void(std::size_t)>* ready;
};

class Tape {
 public:
  Tape();
  ~Tape();
  static void* operator new(std::size_t size);
  static void operator delete(void* p, std::size_t size) noexcept;
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  void record(const ops::OpRecord& op, const ops::OpDetail* detail, std::span<const NDArray> inputs,
              const NDArray& output);
  void backward(const NDArray& target, const ReadyHook* hook);  // backward.cpp; hook may be null
  std::size_t size() const noexcept { return nodes_.size(); }
  std::size_t details() const noexcept { return details_.size(); }  // OpDetails in the side table

  // The recording tape of this thread, or null (none, or paused).
  static Tape* current() noexcept;
  static bool paused() noexcept;
  static void set_paused(bool paused) noexcept;

 private:
  using Slot = TapeBuffers::Slot;
  std::int32_t producer(const NDArray& array) const noexcept;
  void remember(const void* key, std::int32_t node);

  TapeBuffers buffers_;
  std::vector<Node>& nodes_ = buffers_.nodes;
  std::vector<ops::OpDetail>& details_ = buffers_.details;
  std::vector<Slot>& producer_ = buffers_.producer;
  std::size_t producers_ = 0;
};

// Installs the ops layer's recorder (once per process).
void install_recorder();

}  // namespace ndgc::autograd::detail
