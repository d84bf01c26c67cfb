// Helpers of the CUDA engine's entry points (cuda_engine.cpp,
// cuda_engine_layers.cpp): the device of a view made current with its
// stream, and a contiguous view of another view's shape.
#pragma once

#include "cuda_context.hpp"
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
