// HostSegmentSource: C-heap segments under a budget, fake events. See the
// header for what it simulates.
#include "memory/host_segment_source.hpp"

#include <algorithm>
#include <cstdlib>

#include "memory/caching_allocator.hpp"

namespace ndgc::memory {
namespace {
thread_local StreamId t_stream = 0;
}

HostSegmentSource::~HostSegmentSource() = default;

void* HostSegmentSource::allocate_segment(std::size_t bytes) noexcept {
  std::lock_guard lock(mu_);
  ++calls_.allocate;
  if (bytes > budget_ - std::min(used_, budget_)) return nullptr;
  void* p = std::aligned_alloc(kMinBlockSize, (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize);
  if (p) used_ += bytes;
  return p;
}

void HostSegmentSource::free_segment(void* ptr, std::size_t bytes) noexcept {
  std::lock_guard lock(mu_);
  ++calls_.free;
  used_ -= bytes;
  std::free(ptr);
}

StreamId HostSegmentSource::current_stream() noexcept { return t_stream; }
void HostSegmentSource::set_thread_stream(StreamId stream) noexcept { t_stream = stream; }

void* HostSegmentSource::record_event(StreamId stream) noexcept {
  std::lock_guard lock(mu_);
  ++calls_.record;
  try {
    events_.push_back(std::make_unique<Event>(Event{stream}));
  } catch (...) {
    return nullptr;  // cannot track it: behave as if nothing were queued
  }
  return events_.back().get();
}

bool HostSegmentSource::event_done(void* event) noexcept {
  std::lock_guard lock(mu_);
  ++calls_.query;
  return static_cast<Event*>(event)->done;
}

void HostSegmentSource::destroy_event(void* event) noexcept {
  std::lock_guard lock(mu_);
  ++calls_.destroy;
  std::erase_if(events_, [&](const std::unique_ptr<Event>& e) { return e.get() == event; });
}

void HostSegmentSource::synchronize() noexcept {
  std::lock_guard lock(mu_);
  ++calls_.synchronize;
  for (auto& e : events_) e->done = true;
}

std::size_t HostSegmentSource::driver_free_bytes() noexcept {
  std::lock_guard lock(mu_);
  return budget_ - std::min(used_, budget_);
}

void HostSegmentSource::complete_events(StreamId stream) noexcept {
  std::lock_guard lock(mu_);
  for (auto& e : events_)
    if (e->stream == stream) e->done = true;
}

void HostSegmentSource::complete_all() noexcept {
  std::lock_guard lock(mu_);
  for (auto& e : events_) e->done = true;
}

void HostSegmentSource::set_budget(std::size_t bytes) noexcept {
  std::lock_guard lock(mu_);
  budget_ = bytes;
}

HostSegmentSource::Calls HostSegmentSource::calls() const noexcept {
  std::lock_guard lock(mu_);
  return calls_;
}

std::size_t HostSegmentSource::used_bytes() const noexcept {
  std::lock_guard lock(mu_);
  return used_;
}

std::size_t HostSegmentSource::live_events() const noexcept {
  std::lock_guard lock(mu_);
  return events_.size();
}

}  // namespace ndgc::memory
