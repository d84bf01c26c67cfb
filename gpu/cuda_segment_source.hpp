// CudaSegmentSource: the driver side of the caching device allocator
// (memory/segment_source.hpp) over cudaMalloc / cudaFree and CUDA events.
//
// One per device; the policy (pools, splitting, stream-ordered reuse, the OOM
// ladder) lives in src/memory and never calls CUDA itself. Every call makes
// its device current first. Thread-safe: the runtime calls are, and the
// object has no mutable state of its own. noexcept throughout: a failure is
// reported as nullptr / "not done", as the interface asks.
#pragma once

#include "memory/segment_source.hpp"

namespace ndgc::cuda {

class CudaSegmentSource final : public memory::SegmentSource {
 public:
  explicit CudaSegmentSource(int device) noexcept : device_(device) {}

  void* allocate_segment(std::size_t bytes) noexcept override;
  void free_segment(void* ptr, std::size_t bytes) noexcept override;
  // The device's one stream; see Note [One stream per device].
  memory::StreamId current_stream() noexcept override;
  void* record_event(memory::StreamId stream) noexcept override;
  bool event_done(void* event) noexcept override;
  void destroy_event(void* event) noexcept override;
  void synchronize() noexcept override;
  std::size_t driver_free_bytes() noexcept override;
  std::size_t driver_total_bytes() noexcept override;

 private:
  bool enter() noexcept;  // makes device_ current; false if CUDA refuses
  int device_;
};

}  // namespace ndgc::cuda
