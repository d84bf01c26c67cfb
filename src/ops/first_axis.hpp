// A TensorView's first axis as a strided sequence of elements or rows, for
// kernels that read a per-row or per-channel operand (the CUDA norm and LSTM
// kernels). NDGC_HD: the host tests run what the kernels run.
#pragma once

#include <cstdint>

#include "ops/engine.hpp"
#include "ops/host_device.hpp"

namespace ndgc::ops {

template <class T>
struct FirstAxis {
  const T* data;
  std::int64_t stride;  // 0 for a rank-0 view: every index reads its one element
  explicit FirstAxis(const TensorView& v) : data(static_cast<const T*>(v.data)), stride(v.rank ? v.strides[0] : 0) {}
  NDGC_HD T operator[](std::int64_t i) const { return data[i * stride]; }
  NDGC_HD const T* row(std::int64_t i) const { return data + i * stride; }
};

}  // namespace ndgc::ops
