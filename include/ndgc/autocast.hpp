// Mixed precision for a region of code, as torch.autocast:
//
//   {
//     ndgc::Autocast cast(DataType::bfloat16);      // this thread, until the scope ends
//     NDArray logits = model.block().forward(NDList{x}, true)[0];   // linear, conv: bfloat16
//     NDArray loss = sparse_softmax_cross_entropy(logits, labels);  // float32
//   }
//   collector.backward(loss);                       // outside: gradients follow the forward's dtypes
//
// Inside a region (docs/half-precision.md has the table):
//   - 16 bits: matmul, linear, conv2d, lstm, lstm_cell. Their float32 operands
//     are copied to the region's dtype first (to_type, recorded, so float32
//     parameters get float32 gradients). The copies join the op's data's
//     manager (its first operand's), never a parameter's: a step's copies
//     close with the step and the model's manager does not grow.
//   - float32: softmax, log_softmax, sparse_softmax_cross_entropy, sum, mean,
//     layer_norm, exp, log, pow. Their 16-bit operands are widened.
//   - batch_norm keeps x's dtype and computes its statistics in float32 from
//     float32 parameters (ndgc/layers.hpp); 16-bit parameters read with a
//     float32 x are widened.
//   - the rest runs in its operands' dtype; a binary op whose floating
//     operands differ in dtype promotes to the wider one, as PyTorch does.
// Outside a region an op never converts: mixed dtypes are DTypeMismatch.
//
// Thread-safety: the region belongs to the thread that opened it; regions nest.
#pragma once

#include "ndgc/dtype.hpp"

namespace ndgc {

class Autocast {
 public:
  // `lower`: float16 or bfloat16 (InvalidArgument otherwise); float32 turns autocast off inside.
  explicit Autocast(DataType lower);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

  // The calling thread's region's dtype; float32 outside any region.
  static DataType active() noexcept;

 private:
  DataType previous_;
};

}  // namespace ndgc
