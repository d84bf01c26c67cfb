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
// any allocator.
// Thread-safety: everything but release() and the relaxed statistics runs on
// the workspace's thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ndgc/device.hpp"
#include "ndgc/workspace.hpp"

namespace ndgc::memory {

class ArenaBlock;
class Workspace;

// The bytes of one array storage taken from a workspace.
struct Lease {
  char* data = nullptr;
  std::size_t bytes = 0;            // aligned size
  std::size_t begin = 0;            // offset in the block (arena leases)
  ArenaBlock* block = nullptr;      // null: spilled to ordinary memory
  Device device;
  std::uint64_t cycle = 0;          // the cycle it was handed out in (1-based)
  Workspace* workspace = nullptr;   // valid while the workspace holds its unit
  std::uint64_t workspace_id = 0;   // Workspace::id(): readable while either unit is held
  // One unit for the workspace (until it recycles the lease), one for the
  // storage (until it releases it). See Note [Lease units].
  std::atomic<std::uint32_t> refs{2};
  // Opaque to memory: the core's list of arrays in this lease.
  std::atomic<std::uintptr_t> tenants{0};
  Lease* next_free = nullptr;
};

// The arena's leases in the order they were handed out: pushed at the back,
// recycled from the front. A vector and a head index rather than a deque,
// whose chunks would be allocated and freed as the ring turns (a steady
// state must call no allocator, issue 13); its capacity stays.
class LeaseRing {
 public:
  bool empty() const noexcept { return head_ == leases_.size(); }
  Lease* front() const noexcept { return leases_[head_]; }
  void pop_front() noexcept {
    if (++head_ == leases_.size()) leases_.clear(), head_ = 0;
  }
  void push_back(Lease* l) {
    if (head_ > 0 && leases_.size() == leases_.capacity()) {  // reuse the popped front before growing
      leases_.erase(leases_.begin(), leases_.begin() + std::ptrdiff_t(head_));
      head_ = 0;
    }
    leases_.push_back(l);
  }
  auto begin() const noexcept { return leases_.begin() + std::ptrdiff_t(head_); }
  auto end() const noexcept { return leases_.end(); }

 private:
  std::vector<Lease*> leases_;
  std::size_t head_ = 0;
};

// Called before a lease's bytes are reused or freed; closes what lives there.
using LeaseRecycler = void (*)(Lease& lease) noexcept;
void set_lease_recycler(LeaseRecycler recycler);

class Workspace {
 public:
  static constexpr std::size_t kAlignment = 64;

  Workspace(const workspace::Config& config, std::string name, std::uint64_t thread);
  ~Workspace();  // recycles everything (destroy)
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // A lease of at least `bytes` (> 0). Throws OutOfMemory (Spill::fail, or
  // ordinary memory over a limit) naming the workspace.
  Lease* allocate(std::size_t bytes);
  // From the storage, on any thread: its bytes go back (spills: to the allocator).
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
  // Any thread (relaxed reads).
  workspace::Stats stats() const noexcept;
  // "workspace 'LOOP' (thread 2)" for messages.
  std::string describe() const;
  // Why `lease` is being recycled, for ArrayClosed messages: valid inside
  // the recycler only ("because workspace 'LOOP' (thread 2) reused ...").
  std::string describe_recycle(const Lease& lease) const;
  const std::string& mmap_file() const noexcept;

 private:
  // Inline: on every lease (perf/bench_workspace).
  [[gnu::always_inline]] inline Lease* new_lease();
  Lease* place_in_arena(std::size_t bytes);
  Lease* spill(std::size_t bytes, std::size_t requested);
  bool learning() const noexcept;
  std::size_t sized(std::uint64_t bytes) const noexcept;
  void recycle(Lease* lease) noexcept;
  void recycle_arena() noexcept;
  void recycle_spills() noexcept;
  void replace_block(std::size_t capacity);
  [[gnu::always_inline]] inline void add_used(std::int64_t delta) noexcept;

  enum class Recycling : std::uint8_t { new_cycle, wrap, cycle_end, destroyed };

  workspace::Config config_;
  Recycling recycling_ = Recycling::new_cycle;
  std::string name_;
  std::uint64_t id_;
  std::uint64_t thread_;
  ArenaBlock* block_ = nullptr;
  std::size_t offset_ = 0;          // bump pointer
  LeaseRing ring_;                  // arena leases not yet recycled, oldest first
  std::vector<Lease*> spills_;      // spilled leases of the current cycle
  Lease* free_ = nullptr;           // recycled lease records
  bool retire_ = false;             // a recycled lease is still held: Note [Retired blocks]
  std::size_t pending_ = 0;         // arena size for the next cycle (0: keep)
  std::uint64_t cycle_bytes_ = 0, cycle_spilled_ = 0, max_cycle_bytes_ = 0;
  std::atomic<bool> open_{false};
  std::atomic<std::uint64_t> cycle_{0}, learned_{0};
  std::atomic<std::uint64_t> capacity_{0}, used_{0}, peak_used_{0}, spilled_bytes_{0}, cycles_{0},
      allocations_{0}, reallocations_{0};
};

// ---- the thread's workspaces (workspaces.cpp) ----------------------------------

// Arena bytes of every thread's workspaces on `device`, for memory::stats.
struct WorkspaceTotals {
  std::uint64_t capacity = 0, used = 0, spilled = 0;
};
WorkspaceTotals workspace_totals(Device device);

// The innermost open workspace of this thread, or null (none, or a ScopeOut open).
Workspace* current_workspace() noexcept;
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
