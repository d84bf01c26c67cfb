// The embedding op for callers whose indices are already checked (private).
//
//   NDArray rows = ops::embedding_in_range(indices, table);  // each index in [0, V)
//
// ndgc::embedding (ndgc/layers.hpp) checks its indices in the kernel; on a GPU
// that check reads a flag back, a wait for all the work queued before it. The
// ONNX importer checks its indices on the host before it looks them up
// (Note [Shape arithmetic on the host] in onnx/graph_host.cpp), so it calls
// this twin, which tells the engine, forward and backward, that they are in
// range. The CPU engine checks anyway; the CUDA engine skips the read-back,
// and its kernels still guard every access, so an index that is not in range
// writes nothing rather than anything out of bounds.
#pragma once

#include "ndgc/layers.hpp"

namespace ndgc::ops {

NDArray embedding_in_range(const NDArray& indices, const NDArray& weight, Site site = Site::current());

}  // namespace ndgc::ops
