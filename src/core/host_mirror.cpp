// HostMirror: its buffer and the bytes it counts.
#include "core/host_mirror.hpp"

#include "memory/allocator.hpp"

namespace ndgc::detail {

unsigned char* HostMirror::buffer() {
  if (!data) {
    data.reset(new unsigned char[bytes]);
    memory::note_host_mirror_bytes(device, std::int64_t(bytes));
  }
  return data.get();
}

HostMirror::~HostMirror() {
  if (data) memory::note_host_mirror_bytes(device, -std::int64_t(bytes));
}

}  // namespace ndgc::detail
