// Workspaces: the arena and its policies (src/memory/workspace.cpp), with the
// exact bytes the host allocator counts after every cycle.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <random>
#include <vector>
#include <thread>

#include "core/array_impl.hpp"
#include "core/registry.hpp"
#include "memory/workspace.hpp"
#include "test_util.hpp"

using namespace ndgc;
namespace ws = ndgc::workspace;

namespace {

constexpr std::uint64_t kAlign = 64;
std::uint64_t aligned(std::uint64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// One cycle of `name` that creates float32 arrays of the given element counts
// in `m`; returns the workspace's stats at the end of the cycle (before it ends).
ws::Stats run_cycle(const ws::Config& cfg, const std::string& name, NDManager& m,
                    const std::vector<std::int64_t>& sizes) {
  ws::Scope scope = ws::activate(cfg, name);
  for (std::int64_t n : sizes) (void)m.ones({n});
  return scope.stats();
}

const void* data_of(const NDArray& a) {
  detail::Pinned p(a, "test");
  return p->data();
}

// Destroys the workspaces this test made even when a check fails.
struct Cleanup {
  ~Cleanup() { ws::destroy_all_for_this_thread(); }
};

}  // namespace

TEST_CASE("first_loop, overallocate: the first cycle spills, the arena is sized from it, then no spills") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  const std::uint64_t base = test::host_bytes();
  ws::Config cfg;  // ND4J's defaults: first_loop, overallocate 0.3, external spill, block_left
  const std::vector<std::int64_t> sizes{100, 1000, 7};
  const std::uint64_t demand = aligned(400) + aligned(4000) + aligned(28);

  ws::Stats s1 = run_cycle(cfg, "LOOP", m, sizes);
  CHECK(s1.capacity == 0);
  CHECK(s1.spilled_bytes == demand);
  CHECK(s1.allocations == 3);
  // Spilled arrays are closed and freed when their cycle ends; the arena is
  // allocated when the next cycle begins.
  CHECK(test::host_bytes() == base);
  CHECK(ws::stats("LOOP").cycles == 1);

  const std::uint64_t learned = aligned(std::uint64_t(double(demand) * 1.3));
  for (int cycle = 2; cycle <= 5; ++cycle) {
    ws::Stats s = run_cycle(cfg, "LOOP", m, sizes);
    CHECK(s.capacity == learned);
    CHECK(s.used == demand);
    CHECK(s.spilled_bytes == demand);  // nothing spilled after the first cycle
    CHECK(s.allocations == 3u * unsigned(cycle));
    CHECK(test::host_bytes() == base + learned);
  }
  CHECK(ws::stats("LOOP").reallocations == 0);
  ws::destroy("LOOP");
  CHECK(test::host_bytes() == base);
  CHECK_FALSE(ws::exists("LOOP"));
}

TEST_CASE("strict allocation: the arena is exactly the learned size") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  const std::uint64_t base = test::host_bytes();
  ws::Config cfg;
  cfg.allocation = ws::Allocation::strict;
  run_cycle(cfg, "S", m, {10, 20});
  ws::Stats s = run_cycle(cfg, "S", m, {10, 20});
  CHECK(s.capacity == aligned(40) + aligned(80));
  CHECK(s.used == s.capacity);
  CHECK(test::host_bytes() == base + s.capacity);
}

TEST_CASE("learning none: initial_size from the start; what does not fit spills and is freed at cycle end") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  const std::uint64_t base = test::host_bytes();
  ws::Config cfg = test::fixed_arena(1024);
  {
    ws::Scope scope = ws::activate(cfg, "N");
    CHECK(scope.stats().capacity == 1024);
    NDArray a = m.ones({200});  // 800 B: fits
    CHECK(scope.stats().spilled_bytes == 0);
    NDArray b = m.ones({200});  // does not fit: ordinary memory
    CHECK(scope.stats().spilled_bytes == aligned(800));
    CHECK(test::host_bytes() == base + 1024 + aligned(800));
    CHECK(b.sum().item<float>() == 200.0f);
  }
  CHECK(test::host_bytes() == base + 1024);
  // The next cycle is no bigger: external spill never grows the arena.
  ws::Stats s = run_cycle(cfg, "N", m, {200, 200});
  CHECK(s.capacity == 1024);
  CHECK(s.reallocations == 0);
}

TEST_CASE("Spill::fail: OutOfMemory naming the workspace, its cycle and what to try") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  ws::Config cfg = test::fixed_arena(512);
  cfg.spill = ws::Spill::fail;
  ws::Scope scope = ws::activate(cfg, "TIGHT");
  NDArray a = m.ones({64});  // 256 B
  const ws::Stats before = scope.stats();
  try {
    (void)m.ones({100});
    FAIL("expected OutOfMemory");
  } catch (const OutOfMemory& e) {
    std::string what = e.what();
    CHECK(what.find("workspace 'TIGHT'") != std::string::npos);
    CHECK(what.find("cycle 1") != std::string::npos);
    CHECK(what.find("Spill::fail") != std::string::npos);
    CHECK(e.requested() == 400);
  }
  CHECK(scope.stats().allocations == before.allocations);  // a lease refused is not counted
  CHECK(scope.stats().used == before.used);
  CHECK(a.sum().item<float>() == 64.0f);  // the arena is intact
}

TEST_CASE("Spill::fail while learning: the learning cycle still spills") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  ws::Config cfg;
  cfg.spill = ws::Spill::fail;
  ws::Stats s1 = run_cycle(cfg, "L", m, {100});
  CHECK(s1.spilled_bytes == aligned(400));
  ws::Stats s2 = run_cycle(cfg, "L", m, {100});
  CHECK(s2.capacity > 0);
  CHECK_THROWS_AS(run_cycle(cfg, "L", m, {100, 1000}), OutOfMemory);
}

TEST_CASE("Spill::reallocate: the arena grows at the next cycle to fit the last one") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  const std::uint64_t base = test::host_bytes();
  ws::Config cfg = test::fixed_arena(256);
  cfg.spill = ws::Spill::reallocate;
  cfg.allocation = ws::Allocation::strict;
  ws::Stats s1 = run_cycle(cfg, "R", m, {64, 64});  // 256 + 256: the second spills
  CHECK(s1.capacity == 256);
  CHECK(s1.spilled_bytes == 256);
  CHECK(test::host_bytes() == base + 256);
  ws::Stats s2 = run_cycle(cfg, "R", m, {64, 64});
  CHECK(s2.capacity == 512);
  CHECK(s2.spilled_bytes == 256);  // no new spill
  CHECK(s2.reallocations == 1);
  CHECK(test::host_bytes() == base + 512);
}

TEST_CASE("Learning::over_time: sized from the largest of the first N cycles") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  ws::Config cfg;
  cfg.learning = ws::Learning::over_time;
  cfg.cycles_before_initialization = 3;
  cfg.allocation = ws::Allocation::strict;
  CHECK(run_cycle(cfg, "T", m, {16}).capacity == 0);
  CHECK(run_cycle(cfg, "T", m, {160}).capacity == 0);
  CHECK(run_cycle(cfg, "T", m, {32}).capacity == 0);
  ws::Stats s = run_cycle(cfg, "T", m, {160});
  CHECK(s.capacity == 640);
  CHECK(s.spilled_bytes == 64 + 640 + 128);
}

TEST_CASE("max_size caps the learned arena; the rest spills") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  ws::Config cfg;
  cfg.max_size = 1000;
  run_cycle(cfg, "CAP", m, {1000});
  ws::Stats s = run_cycle(cfg, "CAP", m, {100, 1000});
  CHECK(s.capacity == 960);  // 1000 rounded down to the alignment
  CHECK(s.used == aligned(400));
  CHECK(s.spilled_bytes == aligned(4000) * 2);
}

TEST_CASE("block_left: each cycle starts at offset 0 and closes the last cycle's arrays") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  ws::Config cfg = test::fixed_arena(4096);
  NDArray old;
  const void* first = nullptr;
  {
    ws::Scope scope = ws::activate(cfg, "BL");
    old = m.ones({16});
    first = data_of(old);
  }
  CHECK(old.sum().item<float>() == 16.0f);  // valid until the next cycle begins
  ws::Scope scope = ws::activate(cfg, "BL");
  CHECK_THROWS_AS((void)old.sum(), ArrayClosed);
  NDArray fresh = m.zeros({16});
  CHECK(data_of(fresh) == first);
  CHECK(reinterpret_cast<std::uintptr_t>(data_of(fresh)) % kAlign == 0);
}

TEST_CASE("end_of_buffer: arrays stay valid across cycles until the ring wraps over them") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  ws::Config cfg = test::fixed_arena(1024);  // four 256-byte arrays
  cfg.reset = ws::Reset::end_of_buffer;
  std::vector<NDArray> arrays;
  for (int c = 0; c < 3; ++c) {
    ws::Scope scope = ws::activate(cfg, "RING");
    arrays.push_back(m.full({64}, float(c)));
  }
  // Three cycles, three arrays side by side: all valid.
  for (int c = 0; c < 3; ++c) CHECK(arrays[std::size_t(c)].sum().item<float>() == 64.0f * float(c));
  {
    ws::Scope scope = ws::activate(cfg, "RING");
    arrays.push_back(m.full({64}, 3.0f));  // the last slot
    arrays.push_back(m.full({64}, 4.0f));  // wraps over the first cycle's array only
    CHECK(scope.stats().spilled_bytes == 0);
  }
  CHECK_THROWS_AS((void)arrays[0].sum(), ArrayClosed);
  for (int c = 1; c < 5; ++c) CHECK(arrays[std::size_t(c)].sum().item<float>() == 64.0f * float(c));
  CHECK(ws::stats("RING").used == 1024);
}

TEST_CASE("end_of_buffer: a cycle never wraps over its own arrays; it spills instead") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  ws::Config cfg = test::fixed_arena(512);
  cfg.reset = ws::Reset::end_of_buffer;
  ws::Scope scope = ws::activate(cfg, "RING");
  NDArray a = m.full({64}, 1.0f), b = m.full({64}, 2.0f);
  NDArray c = m.full({64}, 3.0f);  // would wrap over a
  CHECK(scope.stats().spilled_bytes == 256);
  CHECK(a.sum().item<float>() == 64.0f);
  CHECK(b.sum().item<float>() == 128.0f);
  CHECK(c.sum().item<float>() == 192.0f);
}

TEST_CASE("end_of_buffer × reallocate: a spill grows the ring at the next cycle, closing the old ring's arrays") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  ws::Config cfg = test::fixed_arena(256);
  cfg.reset = ws::Reset::end_of_buffer;
  cfg.spill = ws::Spill::reallocate;
  cfg.allocation = ws::Allocation::strict;
  NDArray a;
  {
    ws::Scope scope = ws::activate(cfg, "RR");
    a = m.ones({64});
    (void)m.ones({64});  // spills
  }
  CHECK(a.sum().item<float>() == 64.0f);
  ws::Scope scope = ws::activate(cfg, "RR");
  CHECK(scope.stats().capacity == 512);
  CHECK_THROWS_AS((void)a.sum(), ArrayClosed);
}

TEST_CASE("Location::mmap: the arena is a file while the workspace lives; destroy removes it") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  const std::uint64_t base = test::host_bytes();
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "ndgc-ws-test";
  std::filesystem::create_directories(dir);
  ws::Config cfg = test::fixed_arena(1 << 16);
  cfg.location = ws::Location::mmap;
  cfg.mmap_path = dir.string();
  {
    ws::Scope scope = ws::activate(cfg, "MAPPED");
    NDArray a = m.arange(0, 1000);
    CHECK(a.sum().item<float>() == 499500.0f);
    CHECK(test::host_bytes() == base + (1 << 16));  // charged like RAM
  }
  auto files = [&] { return std::distance(std::filesystem::directory_iterator(dir), {}); };
  CHECK(files() == 1);
  ws::destroy("MAPPED");
  CHECK(files() == 0);
  CHECK(test::host_bytes() == base);
  std::filesystem::remove_all(dir);
}

TEST_CASE("Location::mmap to a file that cannot be created: WorkspaceError naming the file") {
  Cleanup cleanup;
  ws::Config cfg = test::fixed_arena(4096);
  cfg.location = ws::Location::mmap;
  cfg.mmap_path = "/nonexistent-dir/arena.bin";
  try {
    ws::Scope scope = ws::activate(cfg, "BAD");
    FAIL("expected WorkspaceError");
  } catch (const WorkspaceError& e) {
    CHECK(std::string(e.what()).find("/nonexistent-dir/arena.bin") != std::string::npos);
  }
}

TEST_CASE("an arena counts against the memory limit: OutOfMemory names the workspace") {
  Cleanup cleanup;
  const std::uint64_t old = memory::limit(Device::cpu());
  memory::set_limit(Device::cpu(), test::host_bytes() + (1 << 20));
  ws::Config cfg = test::fixed_arena(4 << 20);
  try {
    ws::Scope scope = ws::activate(cfg, "HUGE");
    FAIL("expected OutOfMemory");
  } catch (const OutOfMemory& e) {
    CHECK(std::string(e.what()).find("workspace 'HUGE'") != std::string::npos);
  }
  memory::set_limit(Device::cpu(), old);
}

TEST_CASE("leases are 64-byte aligned, bumped in order and counted") {
  ws::Config cfg = test::fixed_arena(4096);
  memory::Workspace w(cfg, "raw", 0);
  w.begin_cycle();
  memory::Lease* a = w.allocate(1);
  memory::Lease* b = w.allocate(65);
  memory::Lease* c = w.allocate(64);
  CHECK(reinterpret_cast<std::uintptr_t>(a->data) % kAlign == 0);
  CHECK(b->data == a->data + 64);
  CHECK(c->data == b->data + 128);
  CHECK(w.stats().used == 256);
  CHECK(w.stats().allocations == 3);
  for (memory::Lease* l : {a, b, c}) memory::Workspace::release(l);
  w.end_cycle();
  w.begin_cycle();
  memory::Lease* d = w.allocate(8);
  CHECK(d->data == a->data);  // block_left: back to offset 0 (the lease records are reused too)
  memory::Workspace::release(d);
  w.end_cycle();
}

TEST_CASE("the inline bump and the general path keep the same books") {
  // block_left with pooled records takes the inline bump (Note [Bump path]);
  // a fresh pool (cycle 1) and end_of_buffer take allocate_slow. Same sizes,
  // same offsets and statistics.
  ws::Config cfg = test::fixed_arena(4096);
  ws::Config ring_cfg = cfg;
  ring_cfg.reset = ws::Reset::end_of_buffer;
  memory::Workspace bump(cfg, "bump", 0), general(ring_cfg, "general", 0);
  const std::size_t sizes[] = {1, 65, 64, 200, 8, 640};
  std::vector<memory::Lease*> first;
  for (int cycle = 1; cycle <= 3; ++cycle) {
    bump.begin_cycle();
    general.begin_cycle();
    CHECK(bump.bump_room() == 4096);  // from cycle 2 on, with records pooled, every lease below is a bump
    CHECK(general.bump_room() == 0);  // end_of_buffer: every lease takes the general path
    std::vector<memory::Lease*> a, b;
    for (std::size_t n : sizes) {
      a.push_back(bump.allocate(n));
      b.push_back(general.allocate(n));
      CAPTURE(n);
      CHECK(a.back()->bytes == b.back()->bytes);
      CHECK(a.back()->cycle == std::uint64_t(cycle));
      CHECK(a.back()->workspace == &bump);
      // end_of_buffer continues where the last cycle ended; compare within the cycle.
      CHECK(a.back()->data - a.front()->data == b.back()->data - b.front()->data);
    }
    CHECK(bump.stats().allocations == general.stats().allocations);
    CHECK(bump.bump_room() == 4096 - 1216);
    CHECK(bump.stats().used == 1216);
    CHECK(bump.stats().peak_used == 1216);
    CHECK(general.stats().used == 1216 * std::uint64_t(cycle));  // earlier cycles' leases stay until wrapped over
    std::vector<memory::Lease*> records = a;
    std::sort(records.begin(), records.end());
    if (cycle == 1) first = records;
    else CHECK(records == first);  // the records are pooled and come back
    // Half released here (a plain store hands the lease over), half on another thread (fetch_sub).
    std::thread other([&] {
      for (std::size_t i = 0; i < a.size(); i += 2) memory::Workspace::release(a[i]);
    });
    other.join();
    for (std::size_t i = 1; i < a.size(); i += 2) memory::Workspace::release(a[i]);
    for (memory::Lease* l : b) memory::Workspace::release(l);
    bump.end_cycle();
    general.end_cycle();
  }
  CHECK(bump.stats().reallocations == 0);  // no lease was left held: the arena was never retired
  CHECK(bump.stats().spilled_bytes == 0);
  CHECK(general.stats().spilled_bytes == 0);
}

TEST_CASE("bump_room: the inline bump is open only while no policy has a say") {
  ws::Config cfg = test::fixed_arena(4096);
  memory::Workspace w(cfg, "room", 0);
  CHECK(w.bump_room() == 0);  // not open yet
  w.begin_cycle();
  CHECK(w.bump_room() == 4096);
  memory::Lease* a = w.allocate(100);
  CHECK(w.bump_room() == 4096 - 128);
  memory::Lease* big = w.allocate(8192);  // does not fit: spills, the room stays
  CHECK(big->block == nullptr);
  CHECK(w.bump_room() == 4096 - 128);
  memory::Workspace::release(big);
  w.end_cycle();
  CHECK(w.bump_room() == 0);  // closed: nothing bumps between cycles
  // `a` is still held when the next cycle recycles it: the block is retired
  // and replaced (Note [Retired blocks]), and the fresh block is all room.
  w.begin_cycle();
  CHECK(w.stats().reallocations == 1);
  CHECK(w.bump_room() == 4096);
  memory::Workspace::release(a);
  memory::Lease* b = w.allocate(1);
  CHECK(w.bump_room() == 4096 - 64);
  memory::Workspace::release(b);
  w.end_cycle();

  ws::Config learn = cfg;
  learn.initial_size = 0;
  learn.learning = ws::Learning::first_loop;
  memory::Workspace l(learn, "learner", 0);
  l.begin_cycle();
  memory::Lease* c = l.allocate(1000);  // the learning cycle spills every lease
  CHECK(l.bump_room() == 0);
  memory::Workspace::release(c);
  l.end_cycle();
  l.begin_cycle();  // sized from the first cycle: 1024 B plus 30 %, aligned
  CHECK(l.stats().capacity == 1344);
  CHECK(l.bump_room() == 1344);
  l.end_cycle();
}

TEST_CASE("the inline bump takes a request exactly when its 64-byte-aligned size fits") {
  // Capacities are multiples of the alignment (1000 B configured: 960), so
  // the inline test compares the request itself with the room.
  memory::Workspace w(test::fixed_arena(1000), "exact", 0);
  for (int cycle = 1; cycle <= 2; ++cycle) {  // cycle 2 has pooled records: the inline bump
    CAPTURE(cycle);
    w.begin_cycle();
    CHECK(w.bump_room() == 960);
    memory::Lease* a = w.allocate(1);
    CHECK(w.bump_room() == 896);
    memory::Lease* over = w.allocate(897);  // 960 aligned: spills
    CHECK(over->block == nullptr);
    CHECK(w.bump_room() == 896);
    memory::Lease* exact = w.allocate(896);  // fills the arena
    CHECK(exact->block != nullptr);
    CHECK(exact->data == a->data + 64);
    CHECK(w.bump_room() == 0);
    for (memory::Lease* l : {a, over, exact}) memory::Workspace::release(l);
    w.end_cycle();
  }
  CHECK(w.stats().allocations == 6);
}

TEST_CASE("peak_used keeps the largest use across the passes that shrink used, seen from any thread") {
  // Note [Peak use]: a lease only adds to used; a recycling pass raises the
  // peak before it subtracts. A reader on another thread never sees the peak
  // fall or fall below used.
  ws::Config cfg = test::fixed_arena(64 * 64);
  memory::Workspace w(cfg, "peak", 0);
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::thread reader([&] {
    std::uint64_t last = 0;
    while (!done.load(std::memory_order_acquire)) {
      ws::Stats s = w.stats();
      if (s.peak_used < last || s.peak_used < s.used) bad.fetch_add(1);
      last = s.peak_used;
    }
  });
  std::uint64_t expected_peak = 0;
  const int leases_per_cycle[] = {3, 1, 7, 2, 5, 0, 4};
  for (int round = 0; round < 200; ++round) {
    const int n = leases_per_cycle[round % 7];
    w.begin_cycle();
    CHECK(w.stats().used == 0);  // block_left: the pass recycled the last cycle's leases
    std::vector<memory::Lease*> held;
    for (int i = 0; i < n; ++i) held.push_back(w.allocate(64));
    expected_peak = std::max<std::uint64_t>(expected_peak, std::uint64_t(n) * 64);
    CHECK(w.stats().used == std::uint64_t(n) * 64);
    CHECK(w.stats().peak_used == expected_peak);
    for (memory::Lease* l : held) memory::Workspace::release(l);
    w.end_cycle();
  }
  done.store(true, std::memory_order_release);
  reader.join();
  CHECK(bad.load() == 0);
  CHECK(w.stats().peak_used == 7 * 64);

  // end_of_buffer: a wrap shrinks used within a cycle; the peak stays.
  ws::Config ring = cfg;
  ring.reset = ws::Reset::end_of_buffer;
  ring.initial_size = 4 * 64;
  memory::Workspace r(ring, "ring-peak", 0);
  r.begin_cycle();
  for (std::size_t bytes : {64, 128, 64}) memory::Workspace::release(r.allocate(bytes));  // full
  r.end_cycle();
  r.begin_cycle();
  memory::Workspace::release(r.allocate(128));  // wraps over the first two (192 B) of the last cycle's
  CHECK(r.stats().used == 3 * 64);
  CHECK(r.stats().peak_used == 4 * 64);
  r.end_cycle();
}

TEST_CASE("a lease no memory could hold: OutOfMemory naming the workspace, its books intact") {
  ws::Config cfg = test::fixed_arena(4096);
  memory::Workspace w(cfg, "huge", 0);
  w.begin_cycle();
  memory::Lease* a = w.allocate(64);
  const ws::Stats before = w.stats();
  // Above the allocators' bound (PTRDIFF_MAX), within 63 of SIZE_MAX where
  // the 64-byte alignment would wrap to a small size, and within 63 below
  // the bound where it would pass it, the workspace refuses with its own
  // message before it aligns, places or spills anything.
  const std::size_t bound = PTRDIFF_MAX;
  for (std::size_t bytes : {SIZE_MAX, SIZE_MAX - 62, SIZE_MAX - 63, bound + 1, bound, bound - 62}) {
    CAPTURE(bytes);
    try {
      (void)w.allocate(bytes);
      FAIL("expected OutOfMemory");
    } catch (const OutOfMemory& e) {
      CHECK(e.requested() == bytes);
      const std::string what = e.what();
      CHECK(what.find("workspace 'huge'") != std::string::npos);
      CHECK(what.find("cannot lease") != std::string::npos);
      CHECK(what.find("more than any allocator can serve") != std::string::npos);
    }
  }
  CHECK(w.stats().allocations == before.allocations);
  CHECK(w.stats().used == before.used);
  CHECK(w.stats().spilled_bytes == 0);
  memory::Lease* b = w.allocate(64);  // the arena goes on where it was
  CHECK(b->data == a->data + 64);
  memory::Workspace::release(a);
  memory::Workspace::release(b);
  w.end_cycle();
}

TEST_CASE("the same name on two threads is two workspaces") {
  Cleanup cleanup;
  ws::Config cfg = test::fixed_arena(1024);
  ws::Scope mine = ws::activate(cfg, "SAME");
  std::uint64_t other_thread_caps = 0;
  std::thread t([&] {
    ws::Config big = cfg;
    big.initial_size = 2048;
    {
      ws::Scope theirs = ws::activate(big, "SAME");  // not "already open": another thread's
      other_thread_caps = theirs.stats().capacity;
    }
    ws::destroy_all_for_this_thread();
  });
  t.join();
  CHECK(other_thread_caps == 2048);
  CHECK(mine.stats().capacity == 1024);
}

TEST_CASE("misuse: WorkspaceError for out-of-order close, destroy while open, activate twice") {
  Cleanup cleanup;
  ws::Config cfg;
  {
    ws::Scope outer = ws::activate(cfg, "OUTER");
    ws::Scope inner = ws::activate(cfg, "INNER");
    try {
      outer.close();
      FAIL("expected WorkspaceError");
    } catch (const WorkspaceError& e) {
      std::string what = e.what();
      CHECK(what.find("'OUTER'") != std::string::npos);
      CHECK(what.find("'INNER'") != std::string::npos);
    }
    try {
      ws::destroy("INNER");
      FAIL("expected WorkspaceError");
    } catch (const WorkspaceError& e) {
      CHECK(std::string(e.what()).find("'INNER'") != std::string::npos);
    }
    CHECK_THROWS_AS((void)ws::activate(cfg, "OUTER"), WorkspaceError);
    CHECK_THROWS_AS(ws::destroy_all_for_this_thread(), WorkspaceError);
    inner.close();
    outer.close();
    CHECK_FALSE(outer.is_open());
  }
  CHECK_THROWS_AS((void)ws::stats("NOPE"), WorkspaceError);
  ws::destroy("NOPE");  // unknown: nothing to do
}

TEST_CASE("nesting and ScopeOut pick where storage comes from") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  ws::Config cfg = test::fixed_arena(4096);
  ws::Scope outer = ws::activate(cfg, "O");
  (void)m.ones({4});
  {
    ws::Scope inner = ws::activate(cfg, "I");
    (void)m.ones({4});
    {
      ws::ScopeOut out;
      const std::uint64_t before = memory::stats(Device::cpu()).allocations;
      (void)m.ones({4});
      CHECK(memory::stats(Device::cpu()).allocations == before + 1);
    }
    CHECK(inner.stats().allocations == 1);
  }
  (void)m.ones({4});
  CHECK(outer.stats().allocations == 2);
  std::vector<ws::Info> all = ws::list();
  bool found = false;
  for (const ws::Info& i : all) found = found || (i.name == "O" && i.open && i.stats.capacity == 4096);
  CHECK(found);
}

TEST_CASE("LeaseRing: first in, first out, like a deque, through cycles and a rolling window") {
  // Recycling drops the oldest n at once: a wrap some, a new cycle all.
  memory::LeaseRing ring;
  std::deque<memory::Lease*> model;
  std::deque<memory::Lease> records;
  std::vector<memory::Lease*> leases;
  for (int i = 0; i < 64; ++i) leases.push_back(&records.emplace_back(nullptr, 0, Device::cpu(), nullptr));
  std::mt19937 rng(5);
  std::size_t next = 0;
  for (int op = 0; op < 20000; ++op) {
    if (model.empty() || rng() % 3 != 0) {
      memory::Lease* l = leases[next++ % leases.size()];
      ring.push_back(l);
      model.push_back(l);
    } else {
      const std::size_t n = 1 + rng() % model.size();
      ring.drop_front(n);
      model.erase(model.begin(), model.begin() + std::ptrdiff_t(n));
    }
    REQUIRE(ring.size() == model.size());
    REQUIRE(std::equal(ring.begin(), ring.end(), model.begin(), model.end()));
  }
  // Cycles of 40 pushes then all dropped (block_left): each cycle pushes from the start.
  ring.drop_front(ring.size());
  memory::Lease* const* start = nullptr;
  for (int cycle = 0; cycle < 100; ++cycle) {
    for (int i = 0; i < 40; ++i) ring.push_back(leases[std::size_t(i)]);
    REQUIRE(std::equal(ring.begin(), ring.end(), leases.begin(), leases.begin() + 40));
    if (cycle == 0) start = ring.begin();
    REQUIRE(ring.begin() == start);  // rewound, and the buffer stays: no growth in a steady state
    ring.drop_front(ring.size());
    REQUIRE(ring.begin() == ring.end());
  }
  // A rolling window of 30 (end_of_buffer).
  for (int i = 0; i < 10000; ++i) {
    ring.push_back(leases[std::size_t(i % 64)]);
    if (i >= 30) {
      REQUIRE(*ring.begin() == leases[std::size_t((i - 30) % 64)]);
      ring.drop_front(1);
    }
  }
  CHECK(ring.size() == 30);
}
