// SegmentSource: the driver side of a caching allocator (docs/gpu.md).
//
// The caching allocator's policy (src/memory/caching_allocator.hpp) is plain
// C++ over this interface, so the same code runs over cudaMalloc/cudaFree/
// cudaEvent on a GPU (gpu/: CudaSegmentSource) and over the C heap with fake
// events in the host tests (HostSegmentSource). A segment is one driver
// allocation; the allocator carves blocks out of it and gives it back whole.
//
// Streams are opaque handles; 0 is the device's default stream. An event marks
// the work queued on a stream so far: once event_done() says so, no kernel
// queued before it can still touch a block, and the block may go to another
// stream. Thread-safety: the caching allocator makes the segment and event
// calls only under its own mutex, so a source need not lock for them;
// current_stream() and the driver_*_bytes() queries (OutOfMemory messages)
// come from any thread without it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ndgc::memory {

using StreamId = std::uintptr_t;  // an opaque stream handle; 0 = the device's default stream

class SegmentSource {  // the driver side of a caching allocator
 public:
  virtual ~SegmentSource() = default;
  virtual void* allocate_segment(std::size_t bytes) noexcept = 0;  // nullptr: the device is out of memory
  virtual void free_segment(void* ptr, std::size_t bytes) noexcept = 0;
  virtual StreamId current_stream() noexcept { return 0; }  // the calling thread's stream
  // Stream-ordered reuse: an event marks the work queued on `stream` so far.
  virtual void* record_event(StreamId stream) noexcept = 0;  // nullptr: nothing to wait for
  virtual bool event_done(void* event) noexcept = 0;
  virtual void destroy_event(void* event) noexcept = 0;
  virtual void synchronize() noexcept = 0;                        // wait for all work on the device
  virtual std::size_t driver_free_bytes() noexcept { return 0; }  // for OutOfMemory messages; 0: unknown
  virtual std::size_t driver_total_bytes() noexcept { return 0; }
};

}  // namespace ndgc::memory
