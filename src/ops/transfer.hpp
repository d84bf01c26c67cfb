// Copies between devices: the one routing every transfer takes
// (NDArray::to_device, NDList::to_device, backward through to_device, a
// batch gathered on the host for a GPU).
//
// Same device: the engine's copy. GPU ↔ host: that GPU's engine's to_host /
// from_host (staged through pinned memory by the CUDA engine). GPU → another
// GPU: through a host buffer (peer copies are for later).
// Thread-safety: as the engines' calls (any thread).
#pragma once

#include "ndgc/device.hpp"
#include "ops/engine.hpp"

namespace ndgc::ops {

// Copies `in` (on `from`) into `out` (on `to`; out's shape and dtype, which
// may differ from in's dtype: converted). Either view may be strided.
void copy_between(const TensorView& in, Device from, const TensorView& out, Device to);

}  // namespace ndgc::ops
