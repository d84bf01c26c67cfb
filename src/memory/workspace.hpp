// Workspace: one thread's cyclic arena and its policies (docs/design.md §6).
//
// The memory layer knows nothing of arrays: it hands out Leases (an aligned
// region of the arena, or ordinary memory when it spills) and, before it
// reuses or frees a lease's bytes, calls the recycler that the core
// installed, which closes the arrays living in it (src/core/workspace_arrays.cpp).
// After that call a lease whose storage is still held (another thread in
// the middle of an op on it, a buffer nobody published) makes the workspace
// retire its block instead of reusing it: Note [Retired blocks].
//
// Numbers: 64-byte alignment (as the host allocator); a lease from an
// initialized arena is a bump of an offset plus a pooled record, no call to
// any allocator, inline (Note [Bump path] in workspace.cpp).
// Thread-safety: everything but release() and the relaxed statistics runs on
// the workspace's thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memory/allocator.hpp"
#include "memory/arena_block.hpp"
#include "ndgc/device.hpp"
#include "ndgc/workspace.hpp"

namespace ndgc::memory {

class Workspace;

// The innermost open workspace of this thread, or null (none, or a ScopeOut
// open). Inline, a TLS load: Storage::allocate asks on every storage (the
// library's TLS dialect keeps that load free of register saves: Note [TLS
// dialect] in src/CMakeLists.txt).
extern constinit thread_local Workspace* t_current_workspace;
inline Workspace* current_workspace() noexcept { return t_current_workspace; }
// A value that tells the running thread from every other live one (the
// address of its t_current_workspace): a TLS address, no load.
inline const void* this_thread_token() noexcept { return &t_current_workspace; }

// The bytes of one array storage taken from a workspace. A record belongs to
// one workspace for its life (pooled by it, or freed), so its workspace,
// workspace_id and device are set once, when it is made.
struct Lease {
  // Opaque to memory: room for the core's Storage object of this lease,
  // which lives inside the record's life (it holds the storage's unit).
  // One record per storage instead of two objects: Note [Storage in its
  // lease] in src/core/storage.cpp.
  static constexpr std::size_t kPayloadBytes = 64;
  alignas(16) std::byte payload[kPayloadBytes];

  char* data = nullptr;
  std::size_t bytes = 0;            // aligned size
  std::size_t begin = 0;            // offset in the block (arena leases)
  ArenaBlock* block = nullptr;      // null: spilled to ordinary memory
  std::uint64_t cycle = 0;          // the cycle it was handed out in (1-based)
  // One unit for the workspace (until it recycles the lease), one for the
  // storage (until it releases it). See Note [Lease units].
  std::atomic<std::uint32_t> refs{2};
  // Opaque to memory: the core's list of arrays in this lease.
  std::atomic<std::uintptr_t> tenants{0};
  Lease* next_free = nullptr;
  Workspace* const workspace;       // valid while the workspace holds its unit
  const std::uint64_t workspace_id; // Workspace::id(): readable while either unit is held
  const Device device;
  const void* const thread;         // the workspace's thread: this_thread_token() there

  Lease(Workspace* ws, std::uint64_t id, Device dev, const void* owner_thread)
      : workspace(ws), workspace_id(id), device(dev), thread(owner_thread) {}
};

// The arena's leases in the order they were handed out: pushed at the back,
// recycled from the front. One buffer and two indices rather than a deque,
// whose chunks would be allocated and freed as the ring turns (a steady
// state must call no allocator, issue 13); its capacity stays. Dropping the
// last lease rewinds both indices, so a block_left arena (all pushed, then
// all dropped) always pushes from the start.
class LeaseRing {
 public:
  LeaseRing() = default;
  LeaseRing(const LeaseRing&) = delete;
  LeaseRing& operator=(const LeaseRing&) = delete;

  std::size_t size() const noexcept { return tail_ - head_; }
  // push_unchecked may be called (it cannot allocate nor throw).
  bool has_room() const noexcept { return tail_ < capacity_; }
  // Recycling drops the oldest n at once (n <= size()).
  void drop_front(std::size_t n) noexcept {
    head_ += n;
    if (head_ == tail_) head_ = tail_ = 0;
  }
  void push_unchecked(Lease* l) noexcept { leases_[tail_++] = l; }
  // std::bad_alloc when it must grow and cannot.
  void push_back(Lease* l) {
    if (!has_room()) make_room();
    push_unchecked(l);
  }
  Lease* const* begin() const noexcept { return leases_.get() + head_; }
  Lease* const* end() const noexcept { return leases_.get() + tail_; }

 private:
  void make_room();  // workspace.cpp

  std::unique_ptr<Lease*[]> leases_;
  std::size_t head_ = 0, tail_ = 0, capacity_ = 0;
};

// Called before the bytes of leases[0, count) are reused or freed; closes
// what lives there. One call per pass (a cycle's arena, the leases a wrap
// overtakes, a cycle's spills), so each lease costs the recycler a loop
// iteration, not an indirect call. Installed by the core before any array
// lives in a lease; until then no lease has anything to close. It only
// closes arrays: it takes no lease, so `leases` (the ring's own buffer)
// stays valid through the call.
using LeaseRecycler = void (*)(Lease* const* leases, std::size_t count) noexcept;
void set_lease_recycler(LeaseRecycler recycler);

class Workspace {
 public:
  static constexpr std::size_t kAlignment = 64;

  Workspace(const workspace::Config& config, std::string name, std::uint64_t thread);
  ~Workspace();  // recycles everything (destroy)
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // A lease of at least `bytes` (> 0). Throws OutOfMemory (more than
  // kMaxLease, Spill::fail, or ordinary memory over a limit) naming the
  // workspace. Inline: the bump.
  Lease* allocate(std::size_t bytes);
  // From the storage, on any thread: its bytes go back (spills: to the
  // allocator). Inline: the storage's unit, while the workspace holds its own.
  static void release(Lease* lease) noexcept;

  void begin_cycle();  // activate
  void end_cycle();    // the scope ends

  const std::string& name() const noexcept { return name_; }
  // Unique in the process (never reused, unlike the object's address).
  std::uint64_t id() const noexcept { return id_; }
  std::uint64_t thread() const noexcept { return thread_; }
  Device device() const noexcept { return config_.device; }
  bool is_open() const noexcept { return open_.load(std::memory_order_relaxed); }
  std::uint64_t cycle() const noexcept { return cycle_.load(std::memory_order_relaxed); }
  std::uint64_t learned_size() const noexcept { return learned_.load(std::memory_order_relaxed); }
  const workspace::Config& config() const noexcept { return config_; }
  // The bytes allocate() may still bump inline in this cycle; 0 while every
  // lease takes the general path (Note [Bump path] in workspace.cpp).
  std::size_t bump_room() const noexcept { return bump_end_ - offset_; }
  // Any thread (relaxed reads).
  workspace::Stats stats() const noexcept;
  // "workspace 'LOOP' (thread 2)" for messages.
  std::string describe() const;
  // Why `lease` is being recycled, for ArrayClosed messages: valid inside
  // the recycler only ("because workspace 'LOOP' (thread 2) reused ...").
  std::string describe_recycle(const Lease& lease) const;
  const std::string& mmap_file() const noexcept;

 private:
  static std::size_t align_up(std::size_t bytes) noexcept { return (bytes + kAlignment - 1) & ~(kAlignment - 1); }
  // The largest lease: the allocators' bound rounded down to the alignment,
  // so that align_up of a request within it neither wraps nor passes the
  // bound (allocate_slow refuses the rest).
  static constexpr std::size_t kMaxLease = kMaxAllocationBytes / kAlignment * kAlignment;
  // The statistics counters have one writer, the workspace's thread (other
  // threads only read them, relaxed): a load and a store, not a locked add.
  static void bump(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  // What every lease shares, whichever path serves it: the record reset for
  // this cycle, an arena lease's place (the bump pointer moves past it), and
  // the counting of a lease taken (arena or spill).
  void reset(Lease* l) const noexcept;
  void place(Lease* l, std::size_t begin, std::size_t bytes) noexcept;
  void count(std::size_t bytes) noexcept;

  Lease* allocate_slow(std::size_t requested);
  static void release_rest(Lease* lease) noexcept;
  Lease* new_lease();
  void set_bump_room() noexcept;
  Lease* place_in_arena(std::size_t bytes);
  Lease* spill(std::size_t bytes, std::size_t requested);
  bool learning() const noexcept;
  std::size_t sized(std::uint64_t bytes) const noexcept;
  void recycle(Lease* const* leases, std::size_t n) noexcept;
  void recycle_arena() noexcept;
  void recycle_spills() noexcept;
  void replace_block(std::size_t capacity);

  enum class Recycling : std::uint8_t { new_cycle, wrap, cycle_end, destroyed };

  workspace::Config config_;
  Recycling recycling_ = Recycling::new_cycle;
  std::string name_;
  std::uint64_t id_;
  std::uint64_t thread_;
  ArenaBlock* block_ = nullptr;
  std::size_t offset_ = 0;          // bump pointer
  std::size_t bump_end_ = 0;        // the inline path bumps up to here; >= offset_: Note [Bump path]
  LeaseRing ring_;                  // arena leases not yet recycled, oldest first
  std::vector<Lease*> spills_;      // spilled leases of the current cycle
  Lease* free_ = nullptr;           // recycled lease records
  bool retire_ = false;             // a recycled lease is still held: Note [Retired blocks]
  std::size_t pending_ = 0;         // arena size for the next cycle (0: keep)
  std::uint64_t cycle_bytes_ = 0, cycle_spilled_ = 0, max_cycle_bytes_ = 0;
  std::atomic<bool> open_{false};
  std::atomic<std::uint64_t> cycle_{0}, learned_{0};
  // used_ only grows between recycling passes, so its peak is taken when a
  // pass shrinks it (and by stats()), not on every lease: Note [Peak use].
  std::atomic<std::uint64_t> capacity_{0}, used_{0}, peak_used_{0}, spilled_bytes_{0}, cycles_{0},
      allocations_{0}, reallocations_{0};
};

inline void Workspace::reset(Lease* l) const noexcept {
  l->refs.store(2, std::memory_order_relaxed);
  l->tenants.store(0, std::memory_order_relaxed);
  l->cycle = cycle_.load(std::memory_order_relaxed);
}

inline void Workspace::place(Lease* l, std::size_t begin, std::size_t bytes) noexcept {
  l->begin = begin;
  l->bytes = bytes;
  l->block = block_;
  l->data = block_->data() + begin;
  offset_ = begin + bytes;
  used_.store(used_.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
}

inline void Workspace::count(std::size_t bytes) noexcept {
  bump(allocations_);
  cycle_bytes_ += bytes;
}

inline Lease* Workspace::allocate(std::size_t requested) {
  Lease* l = free_;
  // See Note [Bump path] in workspace.cpp. The room is a multiple of
  // kAlignment, so a request fits exactly when its aligned size does.
  if (requested <= bump_end_ - offset_ && l && ring_.has_room()) [[likely]] {
    const std::size_t bytes = align_up(requested);
    free_ = l->next_free;
    reset(l);
    place(l, offset_, bytes);
    ring_.push_unchecked(l);
    count(bytes);
    return l;
  }
  return allocate_slow(requested);
}

inline void Workspace::release(Lease* lease) noexcept {
  // The common case: an arena lease released while the workspace still holds
  // its unit, which then ends the lease. On the workspace's own thread no
  // recycle can run meanwhile, so a plain store hands it over; elsewhere the
  // fetch_sub decides the race. See Note [Lease units].
  if (lease->block) [[likely]] {
    if (lease->thread == this_thread_token()) {
      if (lease->refs.load(std::memory_order_relaxed) == 2) {
        lease->refs.store(1, std::memory_order_relaxed);
        return;
      }
    } else if (lease->refs.load(std::memory_order_acquire) != 1 &&
               lease->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) {
      return;
    }
  }
  release_rest(lease);
}

// ---- the thread's workspaces (workspaces.cpp) ----------------------------------

// Arena bytes of every thread's workspaces on `device`, for memory::stats.
struct WorkspaceTotals {
  std::uint64_t capacity = 0, used = 0, spilled = 0;
};
WorkspaceTotals workspace_totals(Device device);

// This thread's open workspace `name`, or null.
Workspace* find_open_workspace(const std::string& name) noexcept;
// Makes `ws` the thread's innermost workspace until destroyed (leverage_to).
class CurrentWorkspace {
 public:
  explicit CurrentWorkspace(Workspace* ws) noexcept;
  ~CurrentWorkspace();
  CurrentWorkspace(const CurrentWorkspace&) = delete;
  CurrentWorkspace& operator=(const CurrentWorkspace&) = delete;

 private:
  Workspace* saved_;
};

}  // namespace ndgc::memory
