// Leak debugging (docs/design.md §5): where the memory is, and which line leaks it.
//
//   debug::Snapshot before = debug::snapshot();          // every live array: ~10 ms per 100k
//   for (int i = 0; i < 100; ++i) train_step();
//   debug::Diff grown = debug::diff(before, debug::snapshot());
//   std::cout << grown.to_text();        // "+300  +1.2 MiB  system/model  /src/train.cpp:42"
//   std::cout << debug::orphans().to_text();             // what auto-close would free, by site
//   debug::dump(model, std::cout, /*detailed=*/true);    // the tree, each array with its site
//   std::string saved = before.to_json();                // ... later, in a tool:
//   debug::Snapshot again = debug::Snapshot::from_json(saved);
//   debug::set_track_close(true);                        // or NDGC_TRACK_CLOSE=1
//   a.close();  a.sum();     // ArrayClosed: "... closed by close() at /src/train.cpp:42"
//
// Every report is a plain value: capture it (snapshot, diff, orphans,
// inspect), then print it for people (to_text) or save it for tools
// (to_json, and from_json to read it back: the round trip gives an equal
// value). Text formats are stable: one header line, then one line per
// group or array, columns in the order documented at each to_text().
// Creation sites are printed as std::source_location gives them: the path
// the compiler saw, then the line. The library's and tools' own sites are
// relative to ndgc's source tree ("src/autograd/gradient_state.cpp:61").
//
// "bytes" means the same everywhere: the buffer bytes an array is charged to
// its manager for (a view shares its base's buffer and is charged 0), so a
// manager's bytes are the sum of its arrays'. A buffer is freed when the last
// array viewing it closes.
//
// Devices: every report knows each array's device. A manager may hold arrays
// on several (to_device's copy joins its source's manager), so the dump,
// snapshot and diff also sum arrays and bytes per device (DeviceBytes). The
// text forms name devices only where a GPU is involved, so a CPU-only
// program's reports read as before; JSON always carries them, and documents
// written before they existed read as all on the CPU (a dump's arrays: on
// their manager's device).
//
// Thread-safety: every function may be called from any thread while others
// create, use and close arrays and managers. A snapshot is taken array by
// array, not all at once: an array created or closed during the walk may be
// in it or not, but each record is a consistent reading of one open array and
// no array appears twice. No lock is held across user code, and none while a
// snapshot copies its records out (each array is pinned for a few
// instructions, see Note [Close protocol] in src/core/registry.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "ndgc/device.hpp"
#include "ndgc/dtype.hpp"
#include "ndgc/manager.hpp"
#include "ndgc/ndarray.hpp"
#include "ndgc/shape.hpp"
#include "ndgc/uuid.hpp"
#include "ndgc/workspace.hpp"

namespace ndgc::debug {

// ---- close-site tracking --------------------------------------------------------

// When on, every close records where it was asked for, and a later use of the
// closed array says so in its ArrayClosed message: the line of close(), the
// NDScope's opening line, the destroyed NDManager's path and creation line,
// or the reclaim drain / sweep. NDGC_TRACK_CLOSE=1 switches
// it on at start-up. Costs one small allocation per close of an array that
// handles still reach.
void set_track_close(bool on) noexcept;
bool track_close() noexcept;

// ---- common pieces -----------------------------------------------------------------

enum class Format : std::uint8_t { text, json };

// For to_text(max_groups): print every group.
inline constexpr std::size_t kAllGroups = static_cast<std::size_t>(-1);

// Arrays and their bytes on one device. Lists of them are ordered by device:
// cpu() first, then gpu(0), gpu(1), ...; devices with no array are left out.
struct DeviceBytes {
  Device device;
  std::uint64_t arrays = 0;
  std::uint64_t bytes = 0;
  friend bool operator==(const DeviceBytes&, const DeviceBytes&) = default;
};
// "cpu() 1.2 MiB in 3 arrays, gpu(0) 4.0 MiB in 2 arrays"
std::string to_string(const std::vector<DeviceBytes>& devices);
// The bytes on `device` in `devices` (0 when it is not listed).
std::uint64_t bytes_on(const std::vector<DeviceBytes>& devices, Device device) noexcept;

// A creation site, as plain data (std::source_location cannot be rebuilt from JSON).
struct SiteInfo {
  std::string file;      // as std::source_location::file_name() gives it
  std::uint32_t line = 0;
  std::string function;  // the enclosing function's signature, as the compiler spells it
  static SiteInfo from(const Site& site);
  std::string to_string() const;  // "file:line"
  friend bool operator==(const SiteInfo&, const SiteInfo&) = default;
};

// ---- dump: the manager tree ---------------------------------------------------------

struct ArrayInfo {
  Uuid uuid;
  std::string name;
  Shape shape;
  DataType dtype = DataType::float32;
  std::uint64_t nbytes = 0;   // size × element size
  std::uint64_t bytes = 0;    // charged to its manager (0 for a view)
  bool view = false;          // shares another array's buffer
  bool borrowed = false;      // here through temp_attach
  SiteInfo site;              // where it was created
  std::uint32_t handles = 0;  // live handles; 0 = orphan, what auto-close would close
  Device device;              // where its buffer is (not always its manager's)
  friend bool operator==(const ArrayInfo&, const ArrayInfo&) = default;
};

struct ManagerInfo {
  std::string name;
  std::string path;  // "system/model/batch"
  Uuid uuid;
  Device device;
  bool open = true;
  bool capped = false;
  std::uint64_t array_count = 0;     // arrays it holds directly
  std::uint64_t bytes = 0;           // their bytes
  std::vector<DeviceBytes> devices;  // the same, per device
  std::vector<ArrayInfo> arrays;     // detailed form only; oldest first
  std::vector<ManagerInfo> children;
  // Arrays and bytes per device of this manager and every one below it.
  std::vector<DeviceBytes> devices_below() const;
  friend bool operator==(const ManagerInfo&, const ManagerInfo&) = default;
};

struct Dump {
  bool detailed = false;
  ManagerInfo root;
  // Every thread's workspaces, in the dump of the whole tree (empty in the
  // dump of one manager: workspaces belong to threads, not managers).
  std::vector<workspace::Info> workspaces;

  // One line per manager, children indented by two spaces:
  //   <path of the root, name below it> [<uuid>] <device>[ closed][ capped]: <n> arrays, <bytes>, <k> sub-managers
  //   [; by device: <to_string(devices)>]
  // (the by-device part when it holds arrays on a GPU) and in the detailed
  // form, below each manager, one line per array:
  //   - <uuid>[ '<name>'] <shape> <dtype> <nbytes>[ (view)][ (borrowed)] at <file>:<line> handles=<n>[ (orphan)][ on <device>]
  // (the device when it is a GPU); when the tree holds arrays on a GPU, a line
  //   by device: <to_string(root.devices_below())>
  // then, when there are workspaces, the section workspaces_text() prints.
  std::string to_text() const;
  std::string to_json(int indent = -1) const;
  // Throws DataError naming the first thing that is wrong.
  static Dump from_json(std::string_view json);
  friend bool operator==(const Dump&, const Dump&) = default;
};

// The tree below `manager`. Throws ManagerClosed for a closed manager and
// InvalidArgument for an empty reference. Sub-managers that close meanwhile
// are listed as closed.
Dump inspect(const ManagerRef& manager, bool detailed = false);
void dump(const ManagerRef& manager, std::ostream& out, bool detailed = false, Format format = Format::text);
std::string dump(const ManagerRef& manager, bool detailed = false, Format format = Format::text);
// The whole tree, from the system manager; in text, followed by the
// workspaces section (workspaces_text) when any workspace exists.
void dump(std::ostream& out, bool detailed = false, Format format = Format::text);

// Every thread's workspaces (ndgc/workspace.hpp): a header line
// "workspaces: N", then one line each:
//   'STEP' thread 1 cpu() open cycle 12: capacity 1.2 MiB, used 800.0 KiB (peak 900.0 KiB),
//   spilled 64.0 KiB, learned 1.2 MiB, 1200 storages, 0 reallocations
std::string workspaces_text();
// The same lines for a given list (a snapshot's or a dump's).
std::string workspaces_text(const std::vector<workspace::Info>& workspaces);

// ---- snapshot: every live array, cheaply --------------------------------------------

// ArrayRecord::workspace of an array in ordinary memory.
inline constexpr std::uint32_t kNoWorkspace = 0xffffffffu;

struct ArrayRecord {
  Uuid uuid;
  std::uint32_t manager = 0;  // index into Snapshot::managers
  std::uint32_t site = 0;     // index into Snapshot::sites
  std::uint64_t bytes = 0;    // charged to its manager (0 for a view)
  std::uint32_t handles = 0;  // 0 = orphan
  // Index into Snapshot::workspaces when its storage is in a workspace's
  // arena (or spilled by one): the workspace, not the manager, decides when
  // it is freed. kNoWorkspace otherwise.
  std::uint32_t workspace = kNoWorkspace;
  Device device;  // where its buffer is
  bool in_workspace() const noexcept { return workspace != kNoWorkspace; }
  friend bool operator==(const ArrayRecord&, const ArrayRecord&) = default;
};

struct Snapshot {
  std::int64_t time_ms = 0;            // when it was taken, ms since the Unix epoch
  std::vector<std::string> managers;   // distinct manager paths
  std::vector<SiteInfo> sites;         // distinct (file, line) pairs
  std::vector<ArrayRecord> arrays;
  std::vector<workspace::Info> workspaces;  // every thread's, when the walk ended

  const std::string& manager_of(const ArrayRecord& a) const { return managers.at(a.manager); }
  const SiteInfo& site_of(const ArrayRecord& a) const { return sites.at(a.site); }
  // The workspace holding the array's storage, or null.
  const workspace::Info* workspace_of(const ArrayRecord& a) const {
    return a.in_workspace() ? &workspaces.at(a.workspace) : nullptr;
  }
  std::uint64_t bytes() const noexcept;
  std::size_t orphan_count() const noexcept;
  std::size_t workspace_array_count() const noexcept;  // arrays whose storage a workspace holds
  std::vector<DeviceBytes> devices() const;             // arrays and bytes per device

  // A header line, then one line per (manager path, site, workspace, device),
  // most bytes first, then the workspaces (workspaces_text) when there are any:
  //   snapshot: <n> arrays, <bytes> (<exact> B), <k> orphans[, <w> arrays in workspaces][; by device: <devices>]
  //       <arrays>  <bytes>  <manager path>  <file>:<line>[  in workspace '<name>'][  on <device>]
  // (the by-device part when an array is on a GPU, the device of a group on a GPU).
  std::string to_text(std::size_t max_groups = kAllGroups) const;
  std::string to_json(int indent = -1) const;
  // Throws DataError naming the first thing that is wrong.
  static Snapshot from_json(std::string_view json);
  friend bool operator==(const Snapshot&, const Snapshot&) = default;
};

// Every open array: its UUID, manager path, creation site, bytes and handle
// count. Drains the auto-close queue first, like every entry point.
Snapshot snapshot();
// How many arrays are open now, every manager's: one counter read, whatever
// their number (a snapshot walks them all). Does not drain the queue.
std::uint64_t live_array_count() noexcept;

// ---- diff: what grew between two snapshots --------------------------------------------

struct DiffGroup {
  std::string manager;  // path
  SiteInfo site;
  std::uint64_t arrays_before = 0, arrays_after = 0;
  std::uint64_t bytes_before = 0, bytes_after = 0;
  // The name of the workspace whose arena holds these arrays; empty for
  // ordinary memory. Such arrays are freed when their workspace recycles or
  // is destroyed, whatever their manager does: growth here is the workspace
  // keeping them (a cycle not yet ended, end_of_buffer's ring, an arena that
  // grew), not a manager leak.
  std::string workspace;
  Device device;  // where these arrays are
  std::int64_t array_growth() const noexcept { return std::int64_t(arrays_after) - std::int64_t(arrays_before); }
  std::int64_t byte_growth() const noexcept { return std::int64_t(bytes_after) - std::int64_t(bytes_before); }
  friend bool operator==(const DiffGroup&, const DiffGroup&) = default;
};

struct Diff {
  struct Totals {
    std::int64_t time_ms = 0;
    std::uint64_t arrays = 0;
    std::uint64_t bytes = 0;
    std::vector<DeviceBytes> devices;  // the same, per device
    friend bool operator==(const Totals&, const Totals&) = default;
  };
  Totals before, after;
  // The (manager path, site, workspace, device) groups whose arrays or bytes
  // changed, largest growth first: by byte growth, then array growth
  // (shrinking groups last).
  std::vector<DiffGroup> groups;

  std::int64_t array_growth() const noexcept { return std::int64_t(after.arrays) - std::int64_t(before.arrays); }
  std::int64_t byte_growth() const noexcept { return std::int64_t(after.bytes) - std::int64_t(before.bytes); }
  // Growth of the bytes on one device.
  std::int64_t byte_growth(Device device) const noexcept {
    return std::int64_t(bytes_on(after.devices, device)) - std::int64_t(bytes_on(before.devices, device));
  }
  // The same diff with only the groups that grew (in arrays or bytes): a leak report.
  Diff growing() const;
  // The same diff with only the groups in ordinary memory (what managers
  // keep), or only those in workspaces. Totals stay those of the snapshots.
  Diff outside_workspaces() const;
  Diff in_workspaces() const;

  // A header line, then one line per group in order, signed:
  //   diff: <+n> arrays, <+bytes> (<+exact> B); before <n> arrays, <bytes>; after <n> arrays, <bytes>
  //         [; <device> <+bytes> (before <bytes>, after <bytes>)]...
  //       <+arrays>  <+bytes>  <manager path>  <file>:<line>[  in workspace '<name>'][  on <device>]
  // (a part per device when either snapshot has arrays on a GPU, the device
  // of a group on a GPU).
  std::string to_text(std::size_t max_groups = kAllGroups) const;
  std::string to_json(int indent = -1) const;
  static Diff from_json(std::string_view json);
  friend bool operator==(const Diff&, const Diff&) = default;
};

// Growth from `before` to `after`, grouped by (manager path, creation site,
// workspace name, device). Managers are matched by path and workspaces by
// name, so a per-step "system/model/batch" counts as one group across steps.
Diff diff(const Snapshot& before, const Snapshot& after);

// ---- orphans: what auto-close would free -----------------------------------------------

struct OrphanGroup {
  SiteInfo site;
  std::uint64_t arrays = 0;
  std::uint64_t bytes = 0;
  std::vector<std::string> managers;  // the paths holding them, sorted
  std::vector<Uuid> uuids;            // sorted
  friend bool operator==(const OrphanGroup&, const OrphanGroup&) = default;
};

struct OrphanReport {
  std::uint64_t arrays = 0;
  std::uint64_t bytes = 0;
  std::vector<OrphanGroup> groups;  // most bytes first, then most arrays

  // A header line, then one line per site:
  //   orphans: <n> arrays, <bytes> (<exact> B) that no handle reaches
  //       <arrays>  <bytes>  <file>:<line>  in <manager path>[, <manager path>...]
  std::string to_text(std::size_t max_groups = kAllGroups) const;
  std::string to_json(int indent = -1) const;
  static OrphanReport from_json(std::string_view json);
  friend bool operator==(const OrphanReport&, const OrphanReport&) = default;
};

// The open arrays that no handle reaches (handle count 0), grouped by
// creation site: exactly what gc::sweep() would close now, and what auto-close
// would have closed had it been on. Changes nothing. With auto-close on, the
// drain at entry closes queued orphans first, so only those orphaned while it
// was off remain.
OrphanReport orphans();
// The same, from a snapshot (one taken earlier, or read from JSON).
OrphanReport orphans(const Snapshot& snapshot);

// ---- reclaimed: what auto-close closed, by site ------------------------------------------

// While on, every array that auto-close's drain or gc::sweep() closes as an
// orphan is counted by its creation site: what auto-close saved you from, line
// by line (the report page's "Reclaimed" column). Off by default; on, each
// reclaim costs a pin and a count under a mutex. Counted since the start or
// reset_reclaimed(); groups as orphans() gives them (most bytes first; bytes
// are each array's size), without managers or UUIDs.
void set_count_reclaimed(bool on) noexcept;
bool count_reclaimed() noexcept;
OrphanReport reclaimed();
void reset_reclaimed();

// ---- leaked handles: what the trace detector closed ------------------------------------

// Arrays the trace detector (docs/design.md §7, ndgc::trace) closed because it
// found their handles unreachable — a `new NDArray` never deleted, handles in
// a dropped cycle of Collectables — grouped by creation site like orphans():
// most bytes first; `managers` are the paths that held them when they were
// closed; `uuids` keeps the first kLeakedUuidsPerSite of each site. Counted
// since the start or reset_leaked_handles(); empty in programs that do not
// run the detector.
inline constexpr std::size_t kLeakedUuidsPerSite = 64;
struct LeakedHandles {
  std::uint64_t arrays = 0;
  std::uint64_t bytes = 0;
  std::vector<OrphanGroup> groups;

  // A header line, then one line per site:
  //   leaked handles: <n> arrays, <bytes> (<exact> B) closed by the trace detector
  //       <arrays>  <bytes>  <file>:<line>  in <manager path>[, <manager path>...]
  std::string to_text(std::size_t max_groups = kAllGroups) const;
  std::string to_json(int indent = -1) const;
  static LeakedHandles from_json(std::string_view json);
  friend bool operator==(const LeakedHandles&, const LeakedHandles&) = default;
};
LeakedHandles leaked_handles();
void reset_leaked_handles();

}  // namespace ndgc::debug
