// CachingAllocator: pools, best-fit, splitting, merging, stream-ordered reuse.
//
// A segment is a doubly linked list of blocks in address order (prev/next);
// every block is in exactly one state: free (in its pool), allocated (in
// allocated_) or pending (freed, waiting for events on other streams).
// Pools are ordered sets keyed by (stream, size, address), so best fit on a
// stream is one lower_bound. Everything runs under mu_.
#include "memory/caching_allocator.hpp"

#include <algorithm>
#include <new>
#include <tuple>

#include "support/assert.hpp"

namespace ndgc::memory {

bool CachingAllocator::BlockLess::operator()(const Block& a, const Block& b) const noexcept {
  return std::tie(a.stream, a.size, a.ptr) < std::tie(b.stream, b.size, b.ptr);
}

CachingAllocator::CachingAllocator(SegmentSource& source, CachingConfig config)
    : source_(source),
      config_(config),
      buckets_(new Allocated::bucket_type[kFirstBuckets]),
      allocated_(Allocated::bucket_traits(buckets_.get(), kFirstBuckets)) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(mu_);
  synchronize_events();
  // Every segment, whatever its blocks' state: gather the blocks, free each
  // segment from its head.
  std::vector<Block*> all;
  for (Block& b : small_) all.push_back(&b);
  for (Block& b : large_) all.push_back(&b);
  for (Block& b : allocated_) all.push_back(&b);
  small_.clear();
  large_.clear();
  allocated_.clear();
  for (Block* head : all) {
    if (head->prev) continue;
    std::size_t bytes = 0;
    for (Block* b = head; b; b = b->next) bytes += b->size;
    source_.free_segment(head->ptr, bytes);
  }
  for (Block* b : all) delete b;
  while (Block* b = spare_) {
    spare_ = b->next;
    delete b;
  }
}

// Note [No heap on a hit]
// A hit splits a cached block and its free merges the pieces back: a Block
// made and dropped, a block in and out of a pool, one in and out of the
// allocated set. With std::set, std::unordered_map and new/delete that was
// eight malloc/free calls, most of a hit's cost (~155 ns a pair). The pools
// and the allocated set are intrusive instead (Boost.Intrusive: the links
// live in the Block), and dropped Blocks are kept as spares, so a hit calls
// no allocator at all; the allocated set's buckets double when it fills.
CachingAllocator::Block* CachingAllocator::make_block(char* ptr, std::size_t size, StreamId stream,
                                                      Pool* pool) noexcept {
  Block* b = spare_;
  if (!b) return new (std::nothrow) Block(ptr, size, stream, pool);
  spare_ = b->next;
  b->ptr = ptr;
  b->size = size;
  b->stream = stream;
  b->pool = pool;
  b->prev = b->next = nullptr;
  b->state = BlockInfo::kFree;
  b->event_count = 0;  // stream_uses is empty: cleared by free()
  return b;
}

void CachingAllocator::drop_block(Block* b) noexcept {
  b->next = spare_;
  spare_ = b;
}

CachingAllocator::Block* CachingAllocator::find_allocated(const void* ptr) const noexcept {
  auto it = allocated_.find(ptr);
  return it == allocated_.end() ? nullptr : const_cast<Block*>(&*it);
}

void CachingAllocator::grow_allocated() noexcept {
  const std::size_t n = allocated_.bucket_count() * 2;
  std::unique_ptr<Allocated::bucket_type[]> more(new (std::nothrow) Allocated::bucket_type[n]);
  if (!more) return;  // the host is out of memory: longer chains, still correct
  allocated_.rehash(Allocated::bucket_traits(more.get(), n));
  buckets_ = std::move(more);
}

std::size_t CachingAllocator::round_size(std::size_t bytes) noexcept {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

std::size_t CachingAllocator::segment_size(std::size_t rounded) noexcept {
  if (rounded <= kSmallSize) return kSmallSegment;
  if (rounded < kMinLargeAlloc) return kLargeSegment;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

// Note [Oversize blocks]
// Best fit alone carves big cached blocks into small pieces: PyTorch saw a
// 50 MB request fail with 13 GB free, all of it in split blocks. So blocks of
// max_split_size or more are "oversize": a request under max_split_size never
// takes one (it would split it), an oversize request takes one only if it
// wastes less than max_oversize_waste, and an oversize block is never split
// (should_split). With the default max_split_size (no limit) none of this
// applies and a large request may take and split any larger cached block.
CachingAllocator::Block* CachingAllocator::find_free(Pool& pool, StreamId stream, std::size_t size) noexcept {
  const Block key(nullptr, size, stream, &pool);
  auto it = pool.lower_bound(key);
  if (it == pool.end() || it->stream != stream) return nullptr;  // blocks are reused on their own stream only
  Block* b = &*it;
  if (size < config_.max_split_size && b->size >= config_.max_split_size) return nullptr;
  if (size >= config_.max_split_size && b->size - size >= config_.max_oversize_waste) return nullptr;
  pool.erase(it);
  if (whole(*b)) --stats_.free_segments;
  return b;
}

// Note [Split thresholds]
// A small-pool block is split whenever the rest can hold a minimum block
// (512 B): small segments are only 2 MiB, so every piece matters. A
// large-pool block is split only if the rest exceeds 1 MiB (anything smaller
// would serve a small request, which the large pool never sees, so it would
// sit as waste in the middle of a segment) and the request is not oversize
// (Note [Oversize blocks]).
bool CachingAllocator::should_split(const Block& b, std::size_t size) const noexcept {
  std::size_t rest = b.size - size;
  if (b.pool == &small_) return rest >= kMinBlockSize;
  return size < config_.max_split_size && rest > kSmallSize;
}

void CachingAllocator::split(Pool& pool, Block* b, std::size_t size) noexcept {
  Block* rest = make_block(b->ptr + size, b->size - size, b->stream, &pool);
  if (!rest) return;  // the host is out of memory: hand out the whole block instead
  rest->prev = b;
  rest->next = b->next;
  if (b->next) b->next->prev = rest;
  b->next = rest;
  b->size = size;
  pool.insert(*rest);
  ++stats_.splits;
}

CachingAllocator::Block* CachingAllocator::new_segment(Pool& pool, StreamId stream, std::size_t size) noexcept {
  std::size_t bytes = segment_size(size);
  void* p = source_.allocate_segment(bytes);
  if (!p) return nullptr;
  Block* b = make_block(static_cast<char*>(p), bytes, stream, &pool);
  if (!b) {
    source_.free_segment(p, bytes);
    return nullptr;
  }
  ++stats_.segment_allocs;
  ++stats_.segments;
  stats_.reserved_bytes += bytes;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  return b;
}

void* CachingAllocator::allocate(std::size_t bytes, StreamId stream) noexcept {
  if (bytes == 0) return nullptr;
  if (bytes > std::numeric_limits<std::size_t>::max() - kRoundLarge) {
    std::lock_guard lock(mu_);
    ++stats_.oom_count;
    return nullptr;
  }
  const std::size_t size = round_size(bytes);
  std::lock_guard lock(mu_);
  if (private_pool_ != 0) stream = private_pool_;
  if (pending_events_ != 0) process_events();
  Pool& pool = is_small(size) ? small_ : large_;
  Block* b = find_free(pool, stream, size);
  if (b) {
    ++stats_.cache_hits;
  } else if (!(b = new_segment(pool, stream, size))) {
    // The source refused: give the cache back and ask once more. Waiting for
    // pending events may also free a block that fits, so look again first.
    ++stats_.alloc_retries;
    release_cached();
    b = find_free(pool, stream, size);
    if (!b) b = new_segment(pool, stream, size);
    if (!b) {
      ++stats_.oom_count;
      return nullptr;
    }
  }
  if (should_split(*b, size)) split(pool, b, size);
  b->state = BlockInfo::kAllocated;
  allocated_.insert(*b);
  if (allocated_.size() > allocated_.bucket_count()) grow_allocated();
  on_allocated(b->size);
  return b->ptr;
}

void CachingAllocator::on_allocated(std::size_t size) noexcept {
  stats_.allocated_bytes += size;
  stats_.active_bytes += size;
  ++stats_.active_blocks;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
}

// Note [Stream-ordered reuse]
// A block is handed out for one stream (its allocation stream); kernels on
// that stream run in order, so once the block is freed on the host, the next
// allocation on the same stream may reuse it at once: its kernels queue
// after those that still read the old contents. Another stream has no such
// order. So the engine calls record_stream() when an op on another stream
// uses the block, and free() then records an event on each such stream and
// keeps the block "pending" until all of them complete. Pending blocks are
// neither handed out nor merged. The events are queried at the start of the
// next allocate() (process_events), and empty_cache() / an allocation the
// source refuses synchronize the device and complete them all. Free blocks
// are reused on their allocation stream only: a block that served stream A
// is never handed to stream B, even when idle, because B's kernels are not
// ordered after A's.
bool CachingAllocator::free(void* ptr) noexcept {
  std::lock_guard lock(mu_);
  Block* b = find_allocated(ptr);
  if (!b) return false;
  allocated_.erase(allocated_.iterator_to(*b));
  stats_.allocated_bytes -= b->size;
  if (!b->stream_uses.empty()) {
    b->state = BlockInfo::kPending;
    for (StreamId s : b->stream_uses) {
      if (void* event = source_.record_event(s)) {
        pending_[s].push_back({event, b});
        ++pending_events_;
        ++b->event_count;
      }
    }
    b->stream_uses.clear();
    if (b->event_count > 0) {
      ++stats_.pending_blocks;
      return true;
    }
  }
  free_block(b);
  return true;
}

bool CachingAllocator::record_stream(void* ptr, StreamId stream) noexcept {
  std::lock_guard lock(mu_);
  Block* b = find_allocated(ptr);
  if (!b) return false;
  if (stream != b->stream && std::find(b->stream_uses.begin(), b->stream_uses.end(), stream) == b->stream_uses.end())
    b->stream_uses.push_back(stream);
  return true;
}

// Note [Private pools]
// A captured device graph (ops/device_graph.cpp) replays kernels with the
// addresses they had at capture, long after the arrays made during capture
// were closed on the host. Were their blocks in the ordinary cache, the next
// array could get one and a replay would overwrite it. So a capture
// allocates from a private pool: its key stands where a stream's would, so
// best fit (keyed by stream first) never hands its blocks to anyone else, and
// its segments are its own (a segment's blocks all share its key, so merging
// stays inside the pool). Freed blocks go back to the pool, where only the
// same capture's later requests find them, as its replays expect. When the
// graph goes, release_private_pool() gives every block of the pool to the
// ordinary stream: free ones become cache for anyone, handed-out ones (arrays
// made during capture that live on) go back there when freed.
void CachingAllocator::open_private_pool(StreamId pool) noexcept {
  std::lock_guard lock(mu_);
  private_pool_ = pool;
}

void CachingAllocator::close_private_pool() noexcept {
  std::lock_guard lock(mu_);
  private_pool_ = 0;
}

void CachingAllocator::release_private_pool(StreamId pool, StreamId stream) noexcept {
  std::lock_guard lock(mu_);
  const Block first(nullptr, 0, pool, nullptr);  // the pool's blocks sort first by key: a run from here
  for (Pool* p : {&small_, &large_}) {
    for (auto it = p->lower_bound(first); it != p->end() && it->stream == pool; it = p->lower_bound(first)) {
      Block& b = *it;
      p->erase(it);  // the key changes: out of the set, then back in
      b.stream = stream;
      p->insert(b);
    }
  }
  for (Block& b : allocated_)
    if (b.stream == pool) b.stream = stream;
}

// A block whose work is done: merge it with free neighbours and cache it.
void CachingAllocator::free_block(Block* b) noexcept {
  stats_.active_bytes -= b->size;
  --stats_.active_blocks;
  b->state = BlockInfo::kFree;
  if (b->prev && b->prev->state == BlockInfo::kFree) {
    Block* prev = b->prev;
    prev->pool->erase(prev->pool->iterator_to(*prev));
    merge(prev, b);
    b = prev;
  }
  if (b->next && b->next->state == BlockInfo::kFree) {
    b->next->pool->erase(b->next->pool->iterator_to(*b->next));
    merge(b, b->next);
  }
  b->pool->insert(*b);
  if (whole(*b)) ++stats_.free_segments;
  if (stats_.cached_bytes() > max_cached_) trim_to_budget();
}

// Absorbs `from`, the free block right after `into`, and deletes it.
void CachingAllocator::merge(Block* into, Block* from) noexcept {
  into->size += from->size;
  into->next = from->next;
  if (from->next) from->next->prev = into;
  drop_block(from);
  ++stats_.merges;
}

void CachingAllocator::process_events() noexcept {
  for (auto it = pending_.begin(); it != pending_.end();) {
    std::deque<PendingEvent>& queue = it->second;
    while (!queue.empty() && source_.event_done(queue.front().event)) {
      PendingEvent done = queue.front();
      queue.pop_front();
      --pending_events_;
      source_.destroy_event(done.event);
      if (--done.block->event_count == 0) {
        --stats_.pending_blocks;
        free_block(done.block);
      }
    }
    it = queue.empty() ? pending_.erase(it) : std::next(it);
  }
}

void CachingAllocator::synchronize_events() noexcept {
  if (pending_events_ == 0) return;
  source_.synchronize();
  for (auto& [stream, queue] : pending_) {
    for (PendingEvent& p : queue) {
      source_.destroy_event(p.event);
      if (--p.block->event_count == 0) {
        --stats_.pending_blocks;
        free_block(p.block);
      }
    }
  }
  pending_.clear();
  pending_events_ = 0;
}

// Note [Giving memory back]
// Only a segment that is one free block (no neighbours) can go back to the
// source: the driver frees whole allocations, and merging has already made
// every fully free segment a single block. Partly used segments stay, so
// empty_cache() cannot defragment; it returns what is wholly unused.
std::size_t CachingAllocator::release_free_segments(Pool& pool) noexcept {
  std::size_t released = 0;
  for (auto it = pool.begin(); it != pool.end();) {
    Block* b = &*it;
    if (!whole(*b)) {
      ++it;
      continue;
    }
    it = pool.erase(it);
    --stats_.free_segments;
    released += b->size;
    release_segment(b);
  }
  return released;
}

// `b` is a wholly free segment, out of its pool already.
void CachingAllocator::release_segment(Block* b) noexcept {
  NDGC_ASSERT(!b->prev && !b->next && b->state == BlockInfo::kFree, "release_segment: a segment still in use");
  source_.free_segment(b->ptr, b->size);
  ++stats_.segment_frees;
  --stats_.segments;
  stats_.reserved_bytes -= b->size;
  drop_block(b);
}

// Note [A cache budget]
// The host keeps its freed large blocks mapped so that a steady loop takes
// no page fault (Note [Large host blocks]), but not without bound: past the
// budget, wholly free segments are given back, the largest first (the
// fewest calls to the source for the bytes). Only a whole segment can go
// back (Note [Giving memory back]), so free pieces of a segment still in
// use stay cached, and cached bytes may stay above the budget until that
// segment is free. Pending blocks cannot go either. While the cached bytes
// stay over the budget in such pieces, every free calls this: the count of
// wholly free segments (free_block keeps it) makes that call O(1) when there
// is nothing to give back, instead of a scan of both pools.
void CachingAllocator::trim_to_budget() noexcept {
  NDGC_ASSERT(stats_.free_segments == count_free_segments(), "trim_to_budget: free_segments is stale");
  for (Pool* pool : {&large_, &small_}) {
    auto it = pool->end();
    while (it != pool->begin() && stats_.free_segments != 0 && stats_.cached_bytes() > max_cached_) {
      Block* b = &*--it;
      if (!whole(*b)) continue;
      it = pool->erase(it);
      --stats_.free_segments;
      release_segment(b);
    }
  }
}

std::uint64_t CachingAllocator::count_free_segments() const noexcept {
  std::uint64_t n = 0;
  for (const Pool* pool : {&small_, &large_}) n += std::uint64_t(std::count_if(pool->begin(), pool->end(), whole));
  return n;
}

void CachingAllocator::set_max_cached_bytes(std::size_t bytes) noexcept {
  std::lock_guard lock(mu_);
  max_cached_ = bytes;
  if (stats_.cached_bytes() > max_cached_) trim_to_budget();
}

std::size_t CachingAllocator::max_cached_bytes() const noexcept {
  std::lock_guard lock(mu_);
  return max_cached_;
}

std::size_t CachingAllocator::release_cached() noexcept {
  synchronize_events();
  return release_free_segments(small_) + release_free_segments(large_);
}

std::size_t CachingAllocator::empty_cache() noexcept {
  std::lock_guard lock(mu_);
  return release_cached();
}

CachingStats CachingAllocator::stats() const noexcept {
  std::lock_guard lock(mu_);
  return stats_;
}

void CachingAllocator::reset_peak() noexcept {
  std::lock_guard lock(mu_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

std::size_t CachingAllocator::block_size(const void* ptr) const noexcept {
  std::lock_guard lock(mu_);
  const Block* b = find_allocated(ptr);
  return b ? b->size : 0;
}

std::vector<CachingAllocator::SegmentInfo> CachingAllocator::snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<const Block*> all;
  for (const Block& b : small_) all.push_back(&b);
  for (const Block& b : large_) all.push_back(&b);
  for (const Block& b : allocated_) all.push_back(&b);
  for (const auto& [stream, queue] : pending_)
    for (const PendingEvent& p : queue) all.push_back(p.block);  // a block waiting on two events shows twice
  std::vector<SegmentInfo> out;
  for (const Block* head : all) {
    if (head->prev || std::any_of(out.begin(), out.end(), [&](const SegmentInfo& s) { return s.ptr == head->ptr; }))
      continue;
    SegmentInfo s{head->ptr, 0, head->stream, head->pool == &small_, {}};
    for (const Block* b = head; b; b = b->next) {
      s.blocks.push_back({std::uintptr_t(b->ptr - head->ptr), b->size, b->state});
      s.size += b->size;
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const SegmentInfo& a, const SegmentInfo& b) {
    return std::less<void*>()(a.ptr, b.ptr);
  });
  return out;
}

}  // namespace ndgc::memory
