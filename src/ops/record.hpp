// The op record: how a later layer (autograd) learns what each op did.
//
// Every differentiable op of the ops layer calls record() with its inputs,
// its output and what it needs to know to differentiate (OpRecord, and for a
// few ops an OpDetail: Note [A lean record]). The
// autograd layer installs the recorder; until it does, record() is one
// relaxed load of a null pointer. The inputs and output are handles, so
// whatever the recorder keeps stays reachable (docs/design.md §3).
// In-place ops are not recorded: they are how optimizers update parameters.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <variant>
#include <vector>

#include "ndgc/ndarray.hpp"
#include "ops/engine.hpp"
#include "ops/random.hpp"

namespace ndgc::ops {

enum class OpKind : std::uint8_t {
  binary,         // binary (array op array, broadcasting)
  binary_scalar,  // binary, scalar, scalar_left
  unary,          // unary
  reduce,         // reduce over axes (mask of the input's axes), keepdims
  matmul,
  reshape,        // any view that keeps the element order: reshape, squeeze, expand_dims, flatten
  permute,        // detail: Permutation
  broadcast_to,   // (shape: the output's)
  get,            // detail: NDIndex
  concat,         // axis
  stack,          // axis
  softmax,        // axis
  log_softmax,    // axis
  where,          // inputs: condition, x, y
  to_type,        // dtype
  copy,           // dup / contiguous copy
  linear,         // inputs: x [m, k], weight [k, n], bias [n]; out = x × weight + bias
  sparse_softmax_cross_entropy,  // inputs: logits [..., classes] (contiguous), labels (one per row)
  to_device,      // the output is the input copied to another device (or to its own)
  conv2d,         // inputs: x, weight[, bias]; detail: Window2d
  max_pool2d,     // detail: Window2d
  avg_pool2d,     // detail: Window2d
  gelu,
  dropout,        // scalar: p; detail: the RandomDraw the mask came from
  embedding,      // inputs: indices, weight; indices_in_range: checked by the caller
  layer_norm,     // inputs: x, gamma, beta; scalar: eps
  batch_norm,     // inputs: x, gamma, beta[, running_mean, running_var when not training]; scalar: eps; training
  lstm_cell,      // inputs: input_gates [B, 4H], hidden_gates [B, 4H], c [B, H]; output [2, B, H] = {h', c'}
  lstm_layer,     // inputs: projection [B, T, 4H], weight_hh [H, 4H][, state0 [2, B, H]]; output [T, 6, B, H]
                  // (Note [One array for a layer's sequence] in ops/lstm_sequence.hpp)
};

// A permute's axes, held in place: recording one allocates nothing.
struct Permutation {
  std::array<std::int8_t, kMaxRank> axes{};
  int rank = 0;
};

// Note [A lean record]
// A tape keeps one OpRecord per recorded op, so the record holds only what
// many ops need: a few enums, a scalar, an axis or an axis mask, a dtype.
// What only one or two op kinds need, and may be large, is an OpDetail passed
// beside the record: get's NDIndex (512 bytes), permute's axes, the window of
// conv2d and the pools, dropout's draw (its stream's seed and offset). The
// tape copies a detail into a side table of its own and keeps its index in
// the node. With the NDIndex inside it, the record was 656 bytes and a tape
// node 760; now they are 32 and 112 (tests/autograd/tape_test.cpp bounds
// them). record() builds the detail only while a recorder is installed, so
// an op outside a GradientCollector copies none of it.
using OpDetail = std::variant<Permutation, NDIndex, Window2d, RandomDraw>;

struct OpRecord {
  OpKind kind;
  Binary binary = Binary::add;
  Unary unary = Unary::neg;
  Reduce reduce = Reduce::sum;
  double scalar = 0;
  bool scalar_left = false;
  bool keepdims = false;
  std::uint32_t axes = 0;
  int axis = 0;
  DataType dtype = DataType::float32;
  bool training = false;
  bool indices_in_range = false;
};

// `detail` is null for an op without one; it lives for the call only.
using Recorder = void (*)(const OpRecord& op, const OpDetail* detail, std::span<const NDArray> inputs,
                          const NDArray& output);
void set_recorder(Recorder recorder) noexcept;

extern std::atomic<Recorder> g_recorder;
inline void record(const OpRecord& op, std::initializer_list<NDArray> inputs, const NDArray& output) {
  if (Recorder r = g_recorder.load(std::memory_order_relaxed))
    r(op, nullptr, std::span<const NDArray>(inputs.begin(), inputs.size()), output);
}
inline void record(const OpRecord& op, std::span<const NDArray> inputs, const NDArray& output) {
  if (Recorder r = g_recorder.load(std::memory_order_relaxed)) r(op, nullptr, inputs, output);
}
template <class Detail>
inline void record(const OpRecord& op, const Detail& detail, std::initializer_list<NDArray> inputs,
                   const NDArray& output) {
  if (Recorder r = g_recorder.load(std::memory_order_relaxed)) {
    const OpDetail d{detail};
    r(op, &d, std::span<const NDArray>(inputs.begin(), inputs.size()), output);
  }
}

}  // namespace ndgc::ops
