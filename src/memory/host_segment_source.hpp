// HostSegmentSource: a SegmentSource over the C heap that behaves like a
// small device, so the caching allocator's policy and the OOM ladder are
// tested on every machine (docs/gpu.md) and benchmarked without a GPU.
//
//   HostSegmentSource src(64 << 20);            // a "device" of 64 MiB
//   CachingAllocator cache(src);
//   HostSegmentSource::set_thread_stream(7);    // this thread's current stream
//   void* e = src.record_event(7);  src.complete_events(7);  // the test decides when work is done
//
// Segments come from aligned_alloc (512-byte aligned, like the minimum block)
// and count against a byte budget: past it, allocate_segment says nullptr as
// cudaMalloc would. Events are fake: each remembers its stream and is done
// only when the test completes it (complete_events, complete_all) or
// synchronize() runs. Every call is counted, so a test can show that a cache
// hit calls no source function. Thread-safety: every member locks a mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "memory/segment_source.hpp"

namespace ndgc::memory {

class HostSegmentSource final : public SegmentSource {
 public:
  explicit HostSegmentSource(std::size_t budget_bytes) : budget_(budget_bytes) {}
  ~HostSegmentSource() override;

  void* allocate_segment(std::size_t bytes) noexcept override;
  void free_segment(void* ptr, std::size_t bytes) noexcept override;
  StreamId current_stream() noexcept override;
  void* record_event(StreamId stream) noexcept override;
  bool event_done(void* event) noexcept override;
  void destroy_event(void* event) noexcept override;
  void synchronize() noexcept override;
  std::size_t driver_free_bytes() noexcept override;
  std::size_t driver_total_bytes() noexcept override { return budget_; }

  // The stream current_stream() reports on the calling thread (default 0).
  static void set_thread_stream(StreamId stream) noexcept;
  // Marks every event recorded so far on `stream` (or on every stream) done.
  void complete_events(StreamId stream) noexcept;
  void complete_all() noexcept;
  void set_budget(std::size_t bytes) noexcept;

  struct Calls {
    std::uint64_t allocate = 0, free = 0, record = 0, query = 0, destroy = 0, synchronize = 0;
    std::uint64_t total() const noexcept { return allocate + free + record + query + destroy + synchronize; }
  };
  Calls calls() const noexcept;
  std::size_t used_bytes() const noexcept;
  std::size_t live_events() const noexcept;

 private:
  struct Event {
    StreamId stream;
    bool done = false;
  };
  mutable std::mutex mu_;
  std::size_t budget_;
  std::size_t used_ = 0;
  std::vector<std::unique_ptr<Event>> events_;  // live (recorded, not destroyed)
  Calls calls_;
};

}  // namespace ndgc::memory
