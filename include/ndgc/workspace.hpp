// Workspaces: ND4J's cyclic memory arenas, safe by construction (docs/design.md §6).
//
//   workspace::Config cfg;                        // defaults: learn the size from the first cycle
//   for (auto& batch : batches) {
//     workspace::Scope ws = workspace::activate(cfg, "LOOP");   // a cycle begins
//     NDArray h = x.matmul(w).relu();             // storage from LOOP's arena (h still joins x's manager)
//     NDArray keep = workspace::detach(h.sum());  // a copy outside every workspace
//     { workspace::ScopeOut out; NDArray u = m.ones({4}); }  // ordinary memory here
//   }                                             // the cycle ends; the next activate reuses the bytes
//   workspace::destroy("LOOP");                   // frees the arena
//
// While a workspace is the innermost one open on a thread, every array that
// thread creates (factories and op outputs alike) takes its storage from the
// workspace's arena, unless a ScopeOut is open. The arrays still belong to a
// manager as usual. When the workspace reuses that memory (block_left: at the
// next activate; end_of_buffer: when the ring wraps over it) or is destroyed,
// the arrays in it are closed: using one then throws ArrayClosed naming the
// workspace and its cycle, and what to call instead (detach, leverage_to).
// No array ever reads memory that a later cycle reused.
//
// Policies (ND4J's WorkspaceConfiguration):
//   learning   none: an arena of initial_size; first_loop: the first cycle spills
//              and the arena is sized from it; over_time: sized from the largest
//              of the first cycles_before_initialization cycles.
//   allocation strict: exactly the learned size; overallocate: plus overallocation.
//   spill      external: arrays that do not fit take ordinary memory, closed and
//              freed when their cycle ends; reallocate: the same, and the arena
//              grows to fit at the next cycle; fail: OutOfMemory naming the workspace.
//   reset      block_left: each cycle starts at offset 0; end_of_buffer: cycles
//              continue where the last left off and wrap, so an array of an
//              earlier cycle stays valid until the ring comes round to it.
//   location   ram, or mmap (a file, removed by destroy).
//   max_size   a hard cap on the arena (learning and growth stop there).
// An arena's bytes count in memory::stats(device) and against its limits.
//
// Errors: WorkspaceError for misuse (a scope closed while an inner one is
// open, leverage_to a workspace not open on this thread, destroy of an open
// workspace, activating a workspace that is already open).
// Thread-safety: workspaces belong to the thread that activated them; the
// same name on two threads names two workspaces. Arrays from a workspace can
// be used on any thread: after their cycle ends they throw ArrayClosed there too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ndgc/device.hpp"
#include "ndgc/ndarray.hpp"

namespace ndgc::memory {
class Workspace;
}

namespace ndgc::workspace {

enum class Learning : std::uint8_t { none, first_loop, over_time };
enum class Allocation : std::uint8_t { strict, overallocate };
enum class Spill : std::uint8_t { external, reallocate, fail };
enum class Reset : std::uint8_t { block_left, end_of_buffer };
enum class Location : std::uint8_t { ram, mmap };

struct Config {
  std::uint64_t initial_size = 0;          // bytes; 0 with learning: learned
  std::uint64_t max_size = 0;              // 0: no cap
  double overallocation = 0.3;             // extra fraction when the size is learned or grown
  std::uint32_t cycles_before_initialization = 0;  // Learning::over_time (0 counts as 1)
  Learning learning = Learning::first_loop;
  Allocation allocation = Allocation::overallocate;
  Spill spill = Spill::external;
  Reset reset = Reset::block_left;
  Location location = Location::ram;
  std::string mmap_path;                   // Location::mmap: a file or a directory; empty: a temp file
  Device device = Device::cpu();           // the arena's device; arrays on other devices bypass it
};

struct Stats {
  std::uint64_t capacity = 0;       // arena bytes (what memory::stats counts for it)
  std::uint64_t used = 0;           // arena bytes held by arrays not yet recycled
  std::uint64_t peak_used = 0;
  std::uint64_t spilled_bytes = 0;  // total that went to ordinary memory
  std::uint64_t cycles = 0;         // cycles ended
  std::uint64_t allocations = 0;    // array storages taken while innermost (spills included)
  std::uint64_t reallocations = 0;  // times the arena was (re)allocated after the first
  friend bool operator==(const Stats&, const Stats&) = default;
};

// An open workspace (RAII): leaving the scope ends the cycle. Move-only.
class Scope {
 public:
  Scope() noexcept = default;
  Scope(Scope&& other) noexcept;
  Scope& operator=(Scope&& other) noexcept;
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  ~Scope();

  // Ends the cycle now. WorkspaceError if a workspace opened inside this one is still open.
  void close();
  bool is_open() const noexcept { return ws_ != nullptr; }
  const std::string& name() const;
  Stats stats() const;

 private:
  friend Scope activate(const Config&, const std::string&);
  explicit Scope(memory::Workspace* ws) noexcept : ws_(ws) {}
  memory::Workspace* ws_ = nullptr;
};

// Opens the thread's workspace `name` (created with `config` the first time;
// later calls reuse it and ignore `config`) and begins a cycle.
[[nodiscard]] Scope activate(const Config& config, const std::string& name);

// While one is open on a thread, allocations there bypass every workspace. Nests.
class ScopeOut {
 public:
  ScopeOut() noexcept;
  ~ScopeOut();
  ScopeOut(const ScopeOut&) = delete;
  ScopeOut& operator=(const ScopeOut&) = delete;

 private:
  memory::Workspace* saved_;
};

// A contiguous copy of `array` in ordinary memory (same manager).
NDArray detach(const NDArray& array, Site site = Site::current());
// A contiguous copy of `array` in the enclosing open workspace `name` of this
// thread (same manager): valid until that workspace recycles it.
NDArray leverage_to(const NDArray& array, const std::string& name, Site site = Site::current());

// Frees the thread's workspace `name` (its arrays close). No-op for an
// unknown name; WorkspaceError while it is open.
void destroy(const std::string& name);
void destroy_all_for_this_thread();

// The statistics of this thread's workspace `name`; WorkspaceError if none.
Stats stats(const std::string& name);
// Whether this thread has a workspace `name` (open or not).
bool exists(const std::string& name);

// Every workspace of every thread, for debug::dump and snapshots.
struct Info {
  std::uint64_t id = 0;       // unique in the process: debug::Snapshot's arrays name their workspace by it
  std::string name;
  std::uint64_t thread = 0;   // a small per-process thread number
  Device device;
  bool open = false;
  std::uint64_t cycle = 0;    // cycles begun
  std::uint64_t learned_size = 0;
  Stats stats;
  friend bool operator==(const Info&, const Info&) = default;
};
std::vector<Info> list();

}  // namespace ndgc::workspace
