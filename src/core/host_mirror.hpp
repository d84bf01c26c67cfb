// HostMirror: the host copy of a GPU storage that reads on the host reuse
// (Note [Host mirror] in ops/host_read.cpp, which fills and reads it).
//
// A Storage makes its mirror on the first read on the host and frees it with
// its buffer. The copy itself (`data`) is allocated on the first read that
// mirrors the whole storage; its bytes count as the device's
// Stats::host_mirror_bytes.
//
// Thread-safety: every field but `device` and `bytes` is guarded by `mu`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "ndgc/device.hpp"

namespace ndgc::detail {

struct HostMirror {
  HostMirror(Device device, std::size_t bytes) noexcept : device(device), bytes(bytes) {}
  ~HostMirror();
  HostMirror(const HostMirror&) = delete;
  HostMirror& operator=(const HostMirror&) = delete;

  // The copy's buffer, allocated on first use; std::bad_alloc.
  unsigned char* buffer();

  const Device device;
  const std::size_t bytes;  // the storage's
  std::mutex mu;
  std::uint64_t copied_at = 0;       // GPU write epoch when `data` was copied; 0: never
  std::uint64_t read_directly_at = 0;  // epoch of the last read that copied only its own elements
  std::unique_ptr<unsigned char[]> data;
};

}  // namespace ndgc::detail
