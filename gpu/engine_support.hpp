// Helpers of the CUDA engine's entry points (cuda_engine.cpp,
// cuda_engine_layers.cpp): the device of a view made current with its
// stream, a contiguous view of another view's shape, and what a device
// graph's capture refuses.
#pragma once

#include <fmt/format.h>

#include "cuda_context.hpp"
#include "ndgc/error.hpp"
#include "ops/engine.hpp"

namespace ndgc::cuda {

// The device of `v` made current, and its stream.
struct On {
  int device;
  cudaStream_t stream;
  explicit On(const ops::TensorView& v) : device(device_of(v.data)), stream(nullptr) {
    select(device);
    stream = cuda::stream(device);
  }
};

// A draw from the random stream takes its position (seed, offset) from the
// host, so a captured draw would repeat the same numbers on every replay:
// InvalidArgument naming `what` while this thread captures on `device`.
inline void refuse_draw_while_capturing(int device, const char* what) {
  if (capturing(device))
    throw InvalidArgument(fmt::format("{} on gpu({}) while this thread captures a device graph: every replay would "
                                      "draw the same random numbers; draw outside the capture",
                                      what, device));
}

// `v`'s shape, contiguous, at `data` with `dtype`.
inline ops::TensorView contiguous_like(const ops::TensorView& v, void* data, DataType dtype) {
  ops::TensorView c = v;
  c.data = data;
  c.dtype = dtype;
  std::int64_t stride = 1;
  for (int i = v.rank - 1; i >= 0; --i) {
    c.strides[i] = stride;
    stride *= v.shape[i];
  }
  return c;
}

}  // namespace ndgc::cuda
