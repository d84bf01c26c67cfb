// float16 and bfloat16 kernels: every engine call with a 16-bit view runs its
// float32 kernel on widened copies and rounds once on store (docs/half-precision.md).
//
// Note [16-bit storage, float32 arithmetic]
// float16 and bfloat16 are storage types: a kernel reads them as float32,
// computes in float32 (reductions accumulate there) and rounds each result
// once when it stores it, as PyTorch's CPU kernels and cuDNN's do. Rather
// than instantiate every kernel of both engines twice more (compile time, and
// two more copies of every loop to keep the same), one wrapper around an
// engine does it for all of them: each 16-bit operand of a call becomes a
// contiguous float32 scratch buffer on its device (its values copied in when
// the kernel reads it), the float32 kernel runs, and each 16-bit output is
// narrowed back by the engine's copy, the only kernel that handles the 16-bit
// types itself. The results are those of the float32 kernel rounded once, so
// they keep its same-bits-at-any-thread-count rule. The cost is two passes
// over memory per 16-bit operand; kernels that need more than that (a bf16
// matmul on AVX512-BF16) are taken by the engine itself before they get here.
// matmul_add, which reads and writes its output, says "no kernel" for
// 16-bit views, and the ops layer composes it from primitives that come back
// through here; the fused optimizer updates widen their state as well and
// store the weight and the state back.
//
// Thread-safety: stateless but for the wrapped engine; from any thread.
#pragma once

#include "ops/engine.hpp"

namespace ndgc::ops {

// The engines wrapped so that they accept 16-bit views: the CPU engine
// (made once), and the GPU engine register_engine hands over (null for
// null; one wrapper for the process, so registering again re-points it).
Engine& widened_cpu_engine(Engine& cpu);
Engine* widened_gpu_engine(Engine* inner) noexcept;

}  // namespace ndgc::ops
