// CachingAllocator: the device-memory policy of docs/gpu.md, in the class of
// PyTorch's CUDA caching allocator, over any SegmentSource.
//
// Key numbers: requests are rounded up to 512 B. Requests of at most 1 MiB
// come from the small pool, carved out of 2 MiB segments; larger ones from
// the large pool, carved out of 20 MiB segments for requests under 10 MiB,
// or of a segment of the request rounded up to 2 MiB. A freed block is
// cached (never given back to the driver until empty_cache() or an
// allocation the driver refuses), merged with its free neighbours, and
// handed out again best-fit on the stream it was allocated on. A hit costs
// no driver call at all.
//
// Thread-safety: every member locks one mutex (as PyTorch's does); the
// SegmentSource is only called under it. See the Notes in
// caching_allocator.cpp for splitting, stream-ordered reuse and giving
// memory back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <boost/intrusive/set.hpp>
#include <boost/intrusive/unordered_set.hpp>

#include "memory/segment_source.hpp"

namespace ndgc::memory {

inline constexpr std::size_t kMinBlockSize = 512;          // every request is rounded to this
inline constexpr std::size_t kSmallSize = 1u << 20;        // largest request of the small pool
inline constexpr std::size_t kSmallSegment = 2u << 20;     // small-pool segment
inline constexpr std::size_t kLargeSegment = 20u << 20;    // large-pool segment for requests < kMinLargeAlloc
inline constexpr std::size_t kMinLargeAlloc = 10u << 20;   // from here a request gets its own segment
inline constexpr std::size_t kRoundLarge = 2u << 20;       // ... rounded up to this

struct CachingConfig {
  // Blocks of this size or more are never split, and only requests of this
  // size or more take them (Note [Oversize blocks]). The default: no limit.
  std::size_t max_split_size = std::numeric_limits<std::size_t>::max();
  // An oversize request takes a cached oversize block at most this much larger.
  std::size_t max_oversize_waste = kLargeSegment;
};

// Exact at every moment (all under the mutex). Bytes are block sizes, i.e.
// rounded requests.
struct CachingStats {
  std::uint64_t allocated_bytes = 0;       // in blocks handed out and not freed
  std::uint64_t reserved_bytes = 0;        // in segments from the source
  std::uint64_t active_bytes = 0;          // handed out, or freed but awaiting events
  std::uint64_t active_blocks = 0;
  std::uint64_t segments = 0;
  std::uint64_t peak_allocated_bytes = 0;  // since construction or reset_peak
  std::uint64_t peak_reserved_bytes = 0;
  std::uint64_t alloc_retries = 0;         // the source refused; cached segments were freed and it was asked again
  std::uint64_t oom_count = 0;             // allocate() returned nullptr
  std::uint64_t splits = 0;
  std::uint64_t merges = 0;
  std::uint64_t segment_allocs = 0;        // successful allocate_segment calls
  std::uint64_t segment_frees = 0;
  std::uint64_t pending_blocks = 0;        // freed, waiting for events on other streams
  std::uint64_t cache_hits = 0;            // allocations served without the source
  std::uint64_t free_segments = 0;         // wholly free segments in the pools: what a budget can give back
  std::uint64_t cached_bytes() const noexcept { return reserved_bytes - allocated_bytes; }
};

class CachingAllocator {
 public:
  explicit CachingAllocator(SegmentSource& source, CachingConfig config = {});
  // Waits for the device, then gives every segment back (blocks still handed
  // out included: the allocator's end is their end).
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` for use on `stream`; nullptr for 0 bytes or
  // when the source refuses even after the cache was given back.
  void* allocate(std::size_t bytes, StreamId stream) noexcept;
  // Returns a block from allocate(); false (and nothing happens) for any
  // other pointer. See Note [Stream-ordered reuse].
  bool free(void* ptr) noexcept;
  // The block `ptr` is used by work queued on `stream` too; its free waits
  // for that work. False for a pointer not handed out.
  bool record_stream(void* ptr, StreamId stream) noexcept;
  // Waits for pending events, then gives every fully free segment back.
  // Returns the bytes given back.
  std::size_t empty_cache() noexcept;

  // Note [Private pools]: while a pool is open, allocate() serves every
  // request from blocks of `pool` alone (a key like a stream's that no real
  // stream has), in segments of its own; release_private_pool() gives its
  // blocks, free and handed out, to `stream`.
  void open_private_pool(StreamId pool) noexcept;
  void close_private_pool() noexcept;
  void release_private_pool(StreamId pool, StreamId stream) noexcept;

  // Note [A cache budget]: past `bytes` cached (reserved but not allocated),
  // wholly free segments go back to the source, largest first. The default:
  // no budget, as on a GPU, where only empty_cache() and a refused
  // allocation give memory back. Setting it trims at once.
  void set_max_cached_bytes(std::size_t bytes) noexcept;
  std::size_t max_cached_bytes() const noexcept;

  CachingStats stats() const noexcept;
  void reset_peak() noexcept;
  const CachingConfig& config() const noexcept { return config_; }
  SegmentSource& source() noexcept { return source_; }
  // The size of the block handed out at `ptr`; 0 when none is.
  std::size_t block_size(const void* ptr) const noexcept;

  // The layout, for tests and dumps: each segment and its blocks in address order.
  struct BlockInfo {
    std::uintptr_t offset;  // from the segment's start
    std::size_t size;
    enum State : std::uint8_t { kFree, kAllocated, kPending } state;
  };
  struct SegmentInfo {
    void* ptr;
    std::size_t size;
    StreamId stream;
    bool small;
    std::vector<BlockInfo> blocks;
  };
  std::vector<SegmentInfo> snapshot() const;

  // The policy's numbers, exposed for tests.
  static std::size_t round_size(std::size_t bytes) noexcept;
  static bool is_small(std::size_t rounded) noexcept { return rounded <= kSmallSize; }
  static std::size_t segment_size(std::size_t rounded) noexcept;

 private:
  // Note [No heap on a hit]: the pools and the allocated set are intrusive
  // (their links live in the Block), and spare Blocks are kept for reuse.
  struct PoolTag;
  struct AllocatedTag;
  using PoolHook = boost::intrusive::set_base_hook<boost::intrusive::tag<PoolTag>>;
  using AllocatedHook = boost::intrusive::unordered_set_base_hook<boost::intrusive::tag<AllocatedTag>>;
  struct Block;
  struct BlockLess {
    bool operator()(const Block& a, const Block& b) const noexcept;
  };
  using Pool = boost::intrusive::set<Block, boost::intrusive::base_hook<PoolHook>,
                                     boost::intrusive::compare<BlockLess>>;
  struct Block : PoolHook, AllocatedHook {
    Block(char* p, std::size_t n, StreamId s, Pool* in) noexcept : ptr(p), size(n), stream(s), pool(in) {}
    char* ptr;
    std::size_t size;
    StreamId stream;
    Pool* pool;
    Block* prev = nullptr;  // neighbours within the segment; `next` links spare Blocks too
    Block* next = nullptr;
    BlockInfo::State state = BlockInfo::kFree;
    int event_count = 0;                // events still to complete before the block is free
    std::vector<StreamId> stream_uses;  // other streams recorded on it (record_stream)
  };
  struct BlockAddress {
    using type = const void*;
    const void* operator()(const Block& b) const noexcept { return b.ptr; }
  };
  struct AddressHash {  // blocks are 512-byte aligned: the low bits say nothing
    std::size_t operator()(const void* p) const noexcept {
      const auto v = reinterpret_cast<std::uintptr_t>(p);
      return std::size_t((v >> 9) ^ (v >> 21));
    }
  };
  using Allocated = boost::intrusive::unordered_set<
      Block, boost::intrusive::base_hook<AllocatedHook>, boost::intrusive::key_of_value<BlockAddress>,
      boost::intrusive::hash<AddressHash>, boost::intrusive::power_2_buckets<true>>;
  struct PendingEvent {
    void* event;
    Block* block;
  };

  Block* find_free(Pool& pool, StreamId stream, std::size_t size) noexcept;
  Block* new_segment(Pool& pool, StreamId stream, std::size_t size) noexcept;
  bool should_split(const Block& b, std::size_t size) const noexcept;
  void split(Pool& pool, Block* b, std::size_t size) noexcept;
  void free_block(Block* b) noexcept;
  void merge(Block* into, Block* from) noexcept;
  void process_events() noexcept;
  void synchronize_events() noexcept;
  std::size_t release_free_segments(Pool& pool) noexcept;
  void release_segment(Block* b) noexcept;
  static bool whole(const Block& b) noexcept { return !b.prev && !b.next; }
  std::uint64_t count_free_segments() const noexcept;
  void trim_to_budget() noexcept;
  std::size_t release_cached() noexcept;
  void on_allocated(std::size_t size) noexcept;
  Block* make_block(char* ptr, std::size_t size, StreamId stream, Pool* pool) noexcept;
  void drop_block(Block* b) noexcept;
  Block* find_allocated(const void* ptr) const noexcept;
  void grow_allocated() noexcept;

  SegmentSource& source_;
  const CachingConfig config_;
  mutable std::mutex mu_;
  Pool small_, large_;
  static constexpr std::size_t kFirstBuckets = 256;
  std::unique_ptr<Allocated::bucket_type[]> buckets_;  // allocated_'s, a power of two of them
  Allocated allocated_;
  Block* spare_ = nullptr;  // dropped Blocks, linked through `next`
  StreamId private_pool_ = 0;  // 0: none open
  // Per stream, in record order: a stream's events complete in order, so
  // the first one not done ends the scan of that stream.
  std::unordered_map<StreamId, std::deque<PendingEvent>> pending_;
  std::size_t pending_events_ = 0;
  std::size_t max_cached_ = std::numeric_limits<std::size_t>::max();
  CachingStats stats_;
};

}  // namespace ndgc::memory
