// Reads on the host, through the host mirror for GPU arrays.
//
// Note [Host mirror]
// ND4J keeps a host copy beside every device buffer and reads on the host
// reuse it until the device writes the buffer again. Without it, a loop of
// item() over a GPU array's elements is one device→host copy (and one
// stream synchronisation) per element, and printing an array just read is
// another copy. Ours:
//   - The copy is of the whole storage (every view of it reads from the one
//     copy), kept in the Storage's HostMirror and freed with the buffer. Its
//     bytes are the device's Stats::host_mirror_bytes.
//   - A read that covers at least half of the storage copies the storage
//     into the mirror and reads from there (the same one transfer as
//     copying its own elements). A smaller read copies only its elements,
//     unless it is the second read of the storage with no GPU write between
//     the two: then the storage is read again, so it is mirrored. A read of
//     one element per training step therefore never copies a whole
//     parameter.
//   - Storages over kHostMirrorMaxBytes are never mirrored: a copy would
//     double a large array's memory for one read.
//   - The copy is valid while the GPU write epoch (ops/gpu_writes.hpp) is
//     the one loaded before it was taken. The epoch counts every write to
//     any GPU memory, so a write to another array also invalidates it: a
//     stale read is impossible as long as every GPU write is counted, which
//     the engine wrapper does for every engine call and NCCL's collectives
//     do for themselves. A per-storage version (ND4J's) would keep more
//     copies valid but needs every write path to name the storage it
//     writes; one missed path would serve stale values without an error.
//   - Two threads reading one storage take its mirror's lock in turn.
#include "ops/host_read.hpp"

#include <mutex>
#include <new>

#include "core/host_mirror.hpp"
#include "ops/cpu/cpu_engine.hpp"
#include "ops/gpu_writes.hpp"

namespace ndgc::ops {

namespace {

TensorView bytes_view(void* data, std::size_t bytes) noexcept {
  TensorView v;
  v.data = data;
  v.dtype = DataType::uint8;
  v.rank = 1;
  v.shape[0] = std::int64_t(bytes);
  v.strides[0] = 1;
  return v;
}

}  // namespace

void read_to_host(const ArrayImpl& a, const TensorView& host_out) {
  const TensorView in = view_of(a);
  detail::Storage& s = *a.storage.get();
  if (a.device.is_cpu() || s.bytes() == 0 || s.bytes() > kHostMirrorMaxBytes) {
    engine(a.device).to_host(in, host_out);
    return;
  }
  detail::HostMirror* mirror;
  try {
    mirror = &s.host_mirror();
  } catch (const std::bad_alloc&) {  // a cache: without room for it, read directly
    engine(a.device).to_host(in, host_out);
    return;
  }
  std::lock_guard lock(mirror->mu);
  const std::uint64_t epoch = gpu_write_epoch();
  if (mirror->copied_at != epoch) {
    const bool large = std::size_t(in.size()) * size_of(a.dtype) * 2 >= s.bytes();
    unsigned char* copy = nullptr;
    if (large || mirror->read_directly_at == epoch) {
      try {
        copy = mirror->buffer();
      } catch (const std::bad_alloc&) {
      }
    }
    if (!copy) {
      mirror->read_directly_at = epoch;
      engine(a.device).to_host(in, host_out);
      return;
    }
    mirror->copied_at = 0;  // a failed copy leaves no valid mirror
    engine(a.device).to_host(bytes_view(s.data(), s.bytes()), bytes_view(copy, s.bytes()));
    mirror->copied_at = epoch;
  }
  TensorView host = in;  // the same elements in the copy
  const std::ptrdiff_t offset =
      static_cast<const unsigned char*>(in.data) - static_cast<const unsigned char*>(s.data());
  host.data = mirror->data.get() + offset;
  cpu::cpu_engine().copy(host, host_out);
}

}  // namespace ndgc::ops
