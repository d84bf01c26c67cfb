// What the layer ops (conv.cpp, pooling.cpp, normalization.cpp, dropout.cpp,
// embedding.cpp) share: the engine check, window validation and contiguous
// scratch copies of their inputs.
#pragma once

#include <cstdint>
#include <memory>

#include "ndgc/layers.hpp"
#include "ops/op_support.hpp"

namespace ndgc::ops {

// InvalidArgument "<op>: not available on gpu:0 yet" when `device`'s engine
// has no layer kernels; asked before anything is allocated.
void check_layer_kernels(const char* op, Device device);
// ShapeMismatch naming `what` (e.g. "x") unless `a` has rank `rank`; `layout` says which ("[N, C, H, W]").
void check_rank(const char* op, const char* what, const ArrayImpl& a, int rank, const char* layout);
// InvalidArgument unless both entries of `p` are at least `least`.
void check_pair(const char* op, const char* what, Pair p, std::int64_t least);
// Output height and width of `w` over x [N, C, H, W]; InvalidArgument when
// the (dilated) kernel is larger than the padded input.
Pair window_output(const char* op, const ArrayImpl& x, const Window2d& w);
// `a`'s elements as a contiguous view: a's own when it is contiguous, else a
// private (unpublished) copy held in `keep`.
TensorView contiguous_of(const ArrayImpl& a, std::unique_ptr<ArrayImpl>& keep, const char* op);

}  // namespace ndgc::ops
