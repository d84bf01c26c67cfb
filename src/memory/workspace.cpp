// Workspace: bump allocation in a cyclic arena, with ND4J's policies.
//
// A cycle runs from begin_cycle (activate) to end_cycle (the scope ends).
// Leases from the arena sit in `ring_`, oldest first; spilled ones in
// `spills_`. Nothing is reused without first recycling the leases that live
// there (the core closes their arrays), and nothing is reused that a storage
// still holds after that (Note [Retired blocks]).
//
// Note [Retired blocks]
// Closing an array that another thread has pinned (an op in flight) only
// marks it closing; its storage goes when that op ends. A buffer built but
// never published (autograd's scratch) has no array to close at all. So after
// recycling, a lease may still be held. Its bytes must not be handed out
// again: the workspace then retires the whole block (drops its unit; the
// block is freed with its last storage) and takes a fresh one of the same
// size. block_left does so at the next cycle's start; end_of_buffer spills
// for the rest of the cycle and replaces the block at the next start. It is
// rare (an array used on another thread across its cycle's end) and costs
// one allocation, counted in Stats::reallocations.
#include "memory/workspace.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "memory/allocator.hpp"
#include "memory/arena_block.hpp"
#include "ndgc/error.hpp"

namespace ndgc::memory {
namespace {

std::atomic<LeaseRecycler> g_recycler{nullptr};

std::uint64_t next_workspace_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

void set_lease_recycler(LeaseRecycler recycler) { g_recycler.store(recycler, std::memory_order_release); }

Workspace::Workspace(const workspace::Config& config, std::string name, std::uint64_t thread)
    : config_(config), name_(std::move(name)), id_(next_workspace_id()), thread_(thread) {
  if (config_.initial_size > 0) {
    std::uint64_t size = config_.initial_size;
    if (config_.max_size > 0) size = std::min(size, config_.max_size);
    pending_ = size / kAlignment * kAlignment;
    learned_.store(pending_, std::memory_order_relaxed);
  }
}

Workspace::~Workspace() {
  recycling_ = Recycling::destroyed;
  recycle_arena();
  recycle_spills();
  if (block_) block_->unref();
  capacity_.store(0, std::memory_order_relaxed);
  while (Lease* l = free_) {
    free_ = l->next_free;
    delete l;
  }
}

std::string Workspace::describe() const { return fmt::format("workspace '{}' (thread {})", name_, thread_); }

std::string Workspace::describe_recycle(const Lease& lease) const {
  switch (recycling_) {
    case Recycling::new_cycle:
      return fmt::format("because {} reused its memory when cycle {} began (the array was created in cycle {})",
                         describe(), cycle() + 1, lease.cycle);
    case Recycling::wrap:
      return fmt::format("because {} (reset end_of_buffer) wrapped over its memory in cycle {} (the array was "
                         "created in cycle {})",
                         describe(), cycle(), lease.cycle);
    case Recycling::cycle_end:
      return fmt::format("because cycle {} of {} ended (the array had spilled to ordinary memory, which a "
                         "workspace frees at the end of its cycle)",
                         lease.cycle, describe());
    case Recycling::destroyed:
      return fmt::format("because {} was destroyed (the array was created in its cycle {})", describe(),
                         lease.cycle);
  }
  return {};
}

const std::string& Workspace::mmap_file() const noexcept {
  static const std::string none;
  return block_ ? block_->file() : none;
}

workspace::Stats Workspace::stats() const noexcept {
  workspace::Stats s;
  s.capacity = capacity_.load(std::memory_order_relaxed);
  s.used = used_.load(std::memory_order_acquire);  // before the peak: Note [Peak use]
  s.peak_used = std::max(peak_used_.load(std::memory_order_relaxed), s.used);
  s.spilled_bytes = spilled_bytes_.load(std::memory_order_relaxed);
  s.cycles = cycles_.load(std::memory_order_relaxed);
  s.allocations = allocations_.load(std::memory_order_relaxed);
  s.reallocations = reallocations_.load(std::memory_order_relaxed);
  return s;
}

// ---- cycles ---------------------------------------------------------------------

bool Workspace::learning() const noexcept {
  return config_.learning != workspace::Learning::none && learned_.load(std::memory_order_relaxed) == 0;
}

// The arena size for `bytes` of demand: overallocation, alignment, the cap.
std::size_t Workspace::sized(std::uint64_t bytes) const noexcept {
  double want = double(bytes);
  if (config_.allocation == workspace::Allocation::overallocate) want *= 1.0 + std::max(0.0, config_.overallocation);
  std::size_t size = align_up(std::size_t(want));
  if (config_.max_size > 0) size = std::min<std::size_t>(size, config_.max_size / kAlignment * kAlignment);
  return size;
}

void Workspace::begin_cycle() {
  std::size_t capacity = block_ ? block_->capacity() : 0;
  bool resize = pending_ != 0 && pending_ != capacity;
  recycling_ = Recycling::new_cycle;
  if (config_.reset == workspace::Reset::block_left || resize || retire_) recycle_arena();
  if (resize || (retire_ && block_)) replace_block(resize ? pending_ : capacity);
  pending_ = 0;
  bump(cycle_);
  cycle_bytes_ = cycle_spilled_ = 0;
  open_.store(true, std::memory_order_relaxed);
  set_bump_room();
}

void Workspace::end_cycle() {
  open_.store(false, std::memory_order_relaxed);
  set_bump_room();
  bump(cycles_);
  const std::uint64_t ended = cycles_.load(std::memory_order_relaxed);
  recycling_ = Recycling::cycle_end;
  recycle_spills();
  max_cycle_bytes_ = std::max(max_cycle_bytes_, cycle_bytes_);
  if (learning()) {
    std::uint32_t wait = std::max<std::uint32_t>(1, config_.cycles_before_initialization);
    bool learned = config_.learning == workspace::Learning::first_loop || ended >= wait;
    if (learned && max_cycle_bytes_ > 0) {
      pending_ = sized(config_.learning == workspace::Learning::first_loop ? cycle_bytes_ : max_cycle_bytes_);
      learned_.store(pending_, std::memory_order_relaxed);
    }
  } else if (config_.spill == workspace::Spill::reallocate && cycle_spilled_ > 0) {
    std::size_t size = sized(cycle_bytes_);
    if (size > capacity_.load(std::memory_order_relaxed)) {
      pending_ = size;
      learned_.store(size, std::memory_order_relaxed);
    }
  }
}

void Workspace::replace_block(std::size_t capacity) {
  if (block_) {
    block_->unref();
    block_ = nullptr;
    capacity_.store(0, std::memory_order_relaxed);
    bump(reallocations_);
  }
  offset_ = 0;
  retire_ = false;
  set_bump_room();
  if (capacity == 0) return;
  block_ = ArenaBlock::create(capacity, config_.device, config_.location, config_.mmap_path, name_);
  capacity_.store(capacity, std::memory_order_relaxed);
}

// ---- leases -----------------------------------------------------------------------

void LeaseRing::make_room() {
  const std::size_t live = tail_ - head_;
  if (head_ > 0 && live < capacity_ / 2) {  // reuse the popped front before growing
    std::copy(begin(), end(), leases_.get());
  } else {
    const std::size_t capacity = std::max<std::size_t>(64, capacity_ * 2);
    auto grown = std::make_unique<Lease*[]>(capacity);
    std::copy(begin(), end(), grown.get());
    leases_ = std::move(grown);
    capacity_ = capacity;
  }
  head_ = 0;
  tail_ = live;
}

// Note [Bump path]
// Workspace::allocate (inline, workspace.hpp) serves a lease with a bump
// and a pooled record when nothing else can happen: the lease fits below
// `bump_end_`, a record is pooled and the ring has room. `bump_end_` is the
// arena's end while the workspace is open, not learning, not retiring its
// block and resets block_left (nothing of an earlier cycle lies ahead of the
// offset); otherwise it is the offset itself (no room), and every lease
// takes allocate_slow: end_of_buffer (which must recycle what lies ahead),
// learning, spills, Spill::fail, the first leases of a fresh pool. An end
// rather than a room, so a bump stores only the offset. Both are multiples of
// kAlignment (every capacity is sized so), and the inline test compares the
// request itself with the room. set_bump_room() is
// the end's only writer, called after every change of the offset or of those
// conditions outside the bump, so the end is never below the offset. Both
// paths do the same bookkeeping; the tests run both (workspace_test.cpp).
void Workspace::set_bump_room() noexcept {
  const bool bump = open_.load(std::memory_order_relaxed) && block_ && !retire_ && !learning() &&
                    config_.reset == workspace::Reset::block_left;
  bump_end_ = bump ? block_->capacity() : offset_;
}

Lease* Workspace::new_lease() {
  Lease* l = free_;
  if (l)
    free_ = l->next_free;
  else
    l = new Lease(this, id_, config_.device, this_thread_token());
  reset(l);
  return l;
}

Lease* Workspace::allocate_slow(std::size_t requested) {
  // Before align_up, which would wrap near SIZE_MAX or pass the allocators' bound.
  if (requested > kMaxLease)
    throw OutOfMemory(fmt::format("OutOfMemory: {} cannot lease {} bytes in cycle {}: more than any allocator "
                                  "can serve (at most {} bytes)",
                                  describe(), requested, cycle(), kMaxLease),
                      requested, capacity_.load(std::memory_order_relaxed), used_.load(std::memory_order_relaxed));
  const std::size_t bytes = align_up(requested);
  const bool learn = learning();
  Lease* l = learn ? nullptr : place_in_arena(bytes);
  if (!l) {
    if (!learn && config_.spill == workspace::Spill::fail) {
      std::uint64_t cap = capacity_.load(std::memory_order_relaxed), used = used_.load(std::memory_order_relaxed);
      throw OutOfMemory(
          fmt::format("OutOfMemory: {} cannot fit {} ({} bytes) in its arena in cycle {} ({} of {} in use) and "
                      "its spill policy is Spill::fail. Try: a larger initial_size or max_size, learning, or "
                      "Spill::external / Spill::reallocate",
                      describe(), format_bytes(bytes), requested, cycle(), format_bytes(used), format_bytes(cap)),
          requested, cap, used);
    }
    l = spill(bytes, requested);
  }
  count(bytes);  // only a lease handed out counts
  return l;
}

Lease* Workspace::place_in_arena(std::size_t bytes) {
  if (!block_ || retire_) return nullptr;
  const std::size_t cap = block_->capacity();
  if (bytes > cap) return nullptr;
  std::size_t begin = offset_;
  if (config_.reset == workspace::Reset::block_left) {
    if (begin + bytes > cap) return nullptr;
  } else {
    // The ring: the bytes to take next are the oldest; recycle the leases
    // there (and, when wrapping, those in the skipped tail), unless one is of
    // this cycle: then it does not fit.
    bool wrap = begin + bytes > cap;
    if (wrap) begin = 0;
    const std::size_t end = begin + bytes;
    const std::uint64_t now = cycle();
    std::size_t n = 0;
    for (Lease* f : ring_) {
      bool in_tail = wrap && f->begin >= offset_;
      bool overlaps = f->begin < end && f->begin + f->bytes > begin;
      if (!in_tail && !overlaps) break;
      if (f->cycle == now) return nullptr;
      ++n;
    }
    recycling_ = Recycling::wrap;
    recycle(ring_.begin(), n);
    ring_.drop_front(n);
    if (retire_) return nullptr;
  }
  Lease* l = new_lease();
  try {
    ring_.push_back(l);
  } catch (...) {
    l->next_free = free_;
    free_ = l;
    throw;
  }
  place(l, begin, bytes);
  set_bump_room();
  return l;
}

Lease* Workspace::spill(std::size_t bytes, std::size_t requested) {
  DeviceAllocator& alloc = allocator(config_.device);
  void* data;
  try {
    data = alloc.allocate(bytes);
  } catch (OutOfMemory& e) {
    throw OutOfMemory(fmt::format("{} (spilling {} from {} in cycle {})", e.what(), format_bytes(requested),
                                  describe(), cycle()),
                      e.requested(), e.limit(), e.in_use());
  }
  Lease* l = nullptr;
  try {
    l = new_lease();
    spills_.push_back(l);
  } catch (...) {
    if (l) {
      l->next_free = free_;
      free_ = l;
    }
    alloc.deallocate(data, bytes);
    throw;
  }
  l->data = static_cast<char*>(data);
  l->bytes = bytes;
  l->begin = 0;
  l->block = nullptr;
  bump(spilled_bytes_, bytes);
  cycle_spilled_ += bytes;
  return l;
}

// Note [Lease units]
// A lease has two units, the workspace's and the storage's, and the party
// that drops the last one pools or frees the record. A side that sees
// refs == 1 knows the other unit is gone for good and ends the lease without
// a locked instruction; otherwise it takes the fetch_sub, which decides the
// race with the other side. A storage released on the workspace's own
// thread has no race to decide: recycling runs only on that thread, so it
// cannot run meanwhile, and a plain store of 1 hands the lease over (the
// record's `thread` is compared with this_thread_token(), a TLS address; a
// dead thread's token may be reused, but by then its workspaces recycled
// every lease, so refs is 1 and the store is never taken). Most leases end
// this way, so most leases take no locked instruction at all (perf/RESULTS.md,
// "Fifth pass").
//
// Note [Block units]
// An arena lease needs its block to outlive it, but while the workspace has
// not recycled the lease the workspace's own unit keeps the block (it drops
// a block only after recycling every lease in it). So a lease takes a unit
// of its block only when it outlives its recycling: recycle() sees the
// storage's unit still there, takes a block unit for the storage and then
// drops its own lease unit; if the storage let go in between (that fetch_sub
// returns 1), the workspace gives the block unit back. release() drops the
// block unit only when it ends the lease after the workspace.
//
// release() (inline) drops the storage's unit of an arena lease that the
// workspace still holds; release_rest() does the rest: spills (whose bytes
// the storage's unit owns) and leases the workspace let go of already.
void Workspace::release_rest(Lease* lease) noexcept {
  if (!lease->block) allocator(lease->device).deallocate(lease->data, lease->bytes);
  // See Note [Lease units].
  if (lease->refs.load(std::memory_order_acquire) == 1 || lease->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    if (lease->block) lease->block->unref();  // taken for this storage by recycle()
    delete lease;
  }
}

// Note [Peak use]
// used_ (the arena bytes of unrecycled leases) grows with each lease and
// shrinks only in a recycling pass, so its largest value since the last pass
// is its value now. A lease therefore adds to used_ and nothing more; a pass
// raises peak_used_ to used_ before it subtracts what it freed, and stats()
// reports the larger of the two. A reader on another thread loads used_
// (acquire, pairing with the pass's release store) before peak_used_, so a
// shrunken used_ comes with the peak raised before it.
inline void Workspace::recycle(Lease* const* leases, std::size_t n) noexcept {
  if (n == 0) return;
  if (LeaseRecycler r = g_recycler.load(std::memory_order_acquire)) r(leases, n);
  std::uint64_t freed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Lease* lease = leases[i];
    ArenaBlock* block = lease->block;
    if (block) freed += lease->bytes;
    bool last = lease->refs.load(std::memory_order_acquire) == 1;
    if (!last) {
      // Still held after its arrays closed: see Notes [Retired blocks], [Lease units] and [Block units].
      if (block) {
        retire_ = true;
        set_bump_room();
        block->ref();
      }
      last = lease->refs.fetch_sub(1, std::memory_order_acq_rel) == 1;
      if (last && block) block->unref();  // the storage let go meanwhile: the unit taken for it is not needed
    }
    if (last) {
      lease->next_free = free_;
      free_ = lease;
    }
  }
  if (freed != 0) {
    const std::uint64_t used = used_.load(std::memory_order_relaxed);
    if (used > peak_used_.load(std::memory_order_relaxed)) peak_used_.store(used, std::memory_order_relaxed);
    used_.store(used - freed, std::memory_order_release);
  }
}

void Workspace::recycle_arena() noexcept {
  recycle(ring_.begin(), ring_.size());
  ring_.drop_front(ring_.size());
  offset_ = 0;
  set_bump_room();
}

void Workspace::recycle_spills() noexcept {
  recycle(spills_.data(), spills_.size());
  spills_.clear();
}

}  // namespace ndgc::memory
