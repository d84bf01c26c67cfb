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

// What a device graph's capture cannot hold (Engine's contract): a host
// transfer, whose host side a replay would not repeat, and a draw from the
// random stream, whose position (seed, offset) the host chose once.
inline constexpr const char* kHostSideInCapture =
    "a replay could not repeat the host's side; copy before the capture or after a replay";
inline constexpr const char* kDrawInCapture =
    "its random numbers were drawn before the capture began, so every replay would repeat them; draw them inside "
    "the capture (forward and backward together) or outside the graph";

// InvalidArgument naming `what` and `why` while this thread captures on `device`.
inline void refuse_while_capturing(int device, const char* what, const char* why) {
  if (capturing(device))
    throw InvalidArgument(fmt::format("{} on gpu({}) while this thread captures a device graph: {}", what, device, why));
}

// A draw fits the moment (Note [Draws in a device graph] in ops/random.cpp):
// one reserved in a capture only inside a capture, one reserved outside only
// outside, else InvalidArgument naming `what`.
inline void check_draw(int device, const char* what, const ops::RandomDraw& draw) {
  if (draw.graph_state == nullptr) return refuse_while_capturing(device, what, kDrawInCapture);
  if (!capturing(device))
    throw InvalidArgument(fmt::format("{} on gpu({}): its random numbers were reserved while a device graph was "
                                      "captured, and only a replay of that graph can draw them; run the op's "
                                      "backward in the same capture",
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
