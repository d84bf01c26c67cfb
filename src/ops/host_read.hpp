// Reading an array's elements into host memory: item, copy_to / to_vector,
// to_string. A GPU array's read goes through its storage's host mirror
// (Note [Host mirror] in host_read.cpp).
#pragma once

#include "ops/engine.hpp"
#include "ops/op_support.hpp"

namespace ndgc::ops {

// Copies `a`'s elements into `host_out` (a host view of a's shape, any
// dtype; converted as the engines' copy does).
void read_to_host(const ArrayImpl& a, const TensorView& host_out);

// Storages up to this size are mirrored; larger ones are always read
// element by element from the device.
inline constexpr std::size_t kHostMirrorMaxBytes = std::size_t(1) << 20;

}  // namespace ndgc::ops
