// The orphan count of /metrics, sampled on a thread of its own.
//
// Note [Counting orphans off the I/O threads]
// Whether an array is an orphan (no handle reaches it) is known only by
// looking at it, and a snapshot of 10^6 live arrays takes about 100 ms: run
// on an I/O thread at every scrape, it held that thread's connections for as
// long, and grew with the arrays. So the count is taken here, at most once
// per `interval` and only while someone scrapes: a scrape reads the latest
// sample at once and, when that is older than `interval`, asks for a fresh
// one. ndgc_orphan_arrays is therefore up to one scrape interval old; the
// other array series (ndgc_live_arrays, the bytes) are read fresh at every
// scrape, each a counter read. Only the very first scrape waits, for the
// first sample.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace ndgc::serving {

class OrphanSampler {
 public:
  explicit OrphanSampler(std::chrono::milliseconds interval = std::chrono::seconds(1));
  ~OrphanSampler();  // stops and joins the thread
  OrphanSampler(const OrphanSampler&) = delete;
  OrphanSampler& operator=(const OrphanSampler&) = delete;

  // The latest sample; asks for a fresh one when it is older than the
  // interval. Waits only for the first sample.
  std::uint64_t latest();
  // Samples taken so far.
  std::uint64_t samples() const;

 private:
  void run();

  const std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, sampled_;
  bool stop_ = false, wanted_ = false;
  std::uint64_t orphans_ = 0, samples_ = 0;
  std::chrono::steady_clock::time_point taken_{};
  std::thread thread_;  // last: starts once the rest is initialised
};

}  // namespace ndgc::serving
