// ShardedCounters: statistics counters that cost no atomic read-modify-write.
//
// Note [Sharded counters]
// Each thread adds to its own shard with a relaxed load and store (it is the
// only writer), and a reader sums every shard. On this machine a locked
// add costs ~5 ns and an op bumps a dozen statistics (allocator totals, gc
// counters), so shared atomics were ~10% of a 64×64 add. Shards are never
// freed: a thread that ends hands its shard back to a free list and the next
// thread continues counting in it, which is correct because every counter
// here is a running total. Readers see a momentary, possibly torn, view
// across counters — fine for statistics, never used for decisions (limits
// use the allocator's one exact atomic).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>

namespace ndgc::support {

template <std::size_t N, class Tag>
class ShardedCounters {
 public:
  void add(std::size_t counter, std::uint64_t delta) noexcept {
    std::atomic<std::uint64_t>& c = local().values[counter];
    c.store(c.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
  }
  std::uint64_t sum(std::size_t counter) const noexcept {
    std::uint64_t total = overflow_.values[counter].load(std::memory_order_relaxed);
    for (Shard* s = head_.load(std::memory_order_acquire); s; s = s->next)
      total += s->values[counter].load(std::memory_order_relaxed);
    return total;
  }

 private:
  struct Shard {
    std::array<std::atomic<std::uint64_t>, N> values{};
    std::atomic<bool> in_use{false};
    Shard* next = nullptr;
  };
  // Gives the thread's shard back when the thread ends. The shard pointer
  // itself is a trivially destructible thread_local, so counting still works
  // from destructors that run after this one (at exit: static objects).
  struct Release {
    bool armed = false;
    ~Release() {
      if (t_shard) t_shard->in_use.store(false, std::memory_order_release);
      t_shard = nullptr;
      t_released = true;
    }
  };
  static inline thread_local Shard* t_shard = nullptr;
  static inline thread_local bool t_released = false;
  static inline thread_local Release t_release;

  Shard& local() noexcept {
    if (Shard* s = t_shard) return *s;
    Shard* s = acquire();
    t_shard = s;
    // Arms the release for this thread; once it has run (the thread's last
    // moments), a shard claimed again simply stays claimed.
    if (!t_released) t_release.armed = true;
    return *s;
  }

  Shard* acquire() noexcept {
    for (Shard* s = head_.load(std::memory_order_acquire); s; s = s->next) {
      bool free = false;
      if (s->in_use.compare_exchange_strong(free, true, std::memory_order_acquire)) return s;
    }
    auto* s = new (std::nothrow) Shard();
    if (!s) return &overflow_;  // no memory for a shard: count in a shared one (racy but harmless)
    s->in_use.store(true, std::memory_order_relaxed);
    std::lock_guard lock(grow_);
    s->next = head_.load(std::memory_order_relaxed);
    head_.store(s, std::memory_order_release);
    return s;
  }

  std::atomic<Shard*> head_{nullptr};
  std::mutex grow_;
  Shard overflow_;
};

}  // namespace ndgc::support
