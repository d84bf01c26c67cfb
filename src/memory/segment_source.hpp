// src/memory/segment_source.hpp   (namespace ndgc::memory)
#pragma once

#include <cstddef>
#include <cstdint>

namespace ndgc::memory {

using StreamId = std::uintptr_t;          // an opaque stream handle; 0 = the device's default stream
class SegmentSource {                      // the driver side of a caching allocator
 public:
  virtual ~SegmentSource() = default;
  virtual void* allocate_segment(std::size_t bytes) noexcept = 0;  // nullptr: the device is out of memory
  virtual void free_segment(void* ptr, std::size_t bytes) noexcept = 0;
  virtual StreamId current_stream() noexcept { return 0; }        // the calling thread's stream
  // Stream-ordered reuse: an event marks the work queued on `stream` so far.
  virtual void* record_event(StreamId stream) noexcept = 0;        // nullptr: nothing to wait for
  virtual bool event_done(void* event) noexcept = 0;
  virtual void destroy_event(void* event) noexcept = 0;
  virtual void synchronize() noexcept = 0;                         // wait for all work on the device
  virtual std::size_t driver_free_bytes() noexcept { return 0; }   // for OutOfMemory messages; 0: unknown
  virtual std::size_t driver_total_bytes() noexcept { return 0; }
};

}  // namespace ndgc::memory
