// The op record: how a later layer (autograd) learns what each op did.
//
// Every differentiable op of the ops layer calls record() with its inputs,
// its output and what it needs to know to differentiate (OpRecord). The
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
#include <vector>

#include "ndgc/ndarray.hpp"
#include "ops/engine.hpp"

namespace ndgc::ops {

enum class OpKind : std::uint8_t {
  binary,         // binary (array op array, broadcasting)
  binary_scalar,  // binary, scalar, scalar_left
  unary,          // unary
  reduce,         // reduce over axes (mask of the input's axes), keepdims
  matmul,
  reshape,        // any view that keeps the element order: reshape, squeeze, expand_dims, flatten
  permute,        // perm
  broadcast_to,   // (shape: the output's)
  get,            // index
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
  conv2d,         // inputs: x, weight[, bias]; window
  max_pool2d,     // window
  avg_pool2d,     // window
  gelu,
  dropout,        // scalar: p; seed, offset: the stream the mask came from
  embedding,      // inputs: indices, weight
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
  Permutation perm{};
  NDIndex index{};
  DataType dtype = DataType::float32;
  Window2d window{};
  std::uint64_t seed = 0, offset = 0;
  bool training = false;
};

using Recorder = void (*)(const OpRecord& op, std::span<const NDArray> inputs, const NDArray& output);
void set_recorder(Recorder recorder) noexcept;

extern std::atomic<Recorder> g_recorder;
inline void record(const OpRecord& op, std::initializer_list<NDArray> inputs, const NDArray& output) {
  if (Recorder r = g_recorder.load(std::memory_order_relaxed))
    r(op, std::span<const NDArray>(inputs.begin(), inputs.size()), output);
}
inline void record(const OpRecord& op, std::span<const NDArray> inputs, const NDArray& output) {
  if (Recorder r = g_recorder.load(std::memory_order_relaxed)) r(op, inputs, output);
}

}  // namespace ndgc::ops
