// DeviceBytes lists (ndgc/debug.hpp): arrays and bytes per device, kept in
// device order (cpu() first, then gpu(0), gpu(1), ...), for the dump, the
// snapshot and the diff. A list has one entry per device that holds an
// array, so it stays a handful of entries and a linear scan is the lookup.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <vector>

#include "ndgc/debug.hpp"

namespace ndgc::debug::by_device {

// Adds `arrays` arrays of `bytes` bytes on `device` to `list`.
void add(std::vector<DeviceBytes>& list, Device device, std::uint64_t bytes, std::uint64_t arrays = 1);
// Whether any entry is a GPU: the text forms name devices only then.
bool any_gpu(const std::vector<DeviceBytes>& list) noexcept;
// The order of the lists: cpu() first, then GPUs by index.
bool device_before(Device a, Device b) noexcept;

}  // namespace ndgc::debug::by_device
