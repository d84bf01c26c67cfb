// Snapshots, orphan reports, dumps and diffs taken while other threads create
// and drop arrays, move them between managers, close managers and toggle
// auto-close: no crash, and no torn record (each record is one array's
// consistent state: known sites have known sizes, no UUID appears twice,
// every index is in range). Run under TSan too (build-debug-tsan).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "debug_test_util.hpp"
#include "test_util.hpp"

using namespace ndgc;

namespace {

struct Lines {
  std::atomic<int> f32{0}, i64{0}, view{0};
};

struct Shared {
  std::mutex mu;
  std::vector<ManagerRef> managers;  // any thread may use or close these
  std::atomic<bool> stop{false};
  std::atomic<long> created{0};
  Lines lines;
};

ManagerRef pick(Shared& s, std::mt19937& rng) {
  std::lock_guard lock(s.mu);
  if (s.managers.empty()) return {};
  return s.managers[rng() % s.managers.size()];
}

void worker(Shared& s, NDManager& base, int seed) {
  std::mt19937 rng(seed);
  std::deque<NDArray> kept;
  std::vector<NDManager> own;
  while (!s.stop.load(std::memory_order_relaxed)) {
    try {
      switch (rng() % 8) {
        case 0: {  // a new sub-manager others may use and close
          NDManager m = base.new_sub_manager(rng() % 2 ? "step" : "");
          std::lock_guard lock(s.mu);
          s.managers.push_back(m);
          if (s.managers.size() > 16) s.managers.erase(s.managers.begin());
          own.push_back(std::move(m));
          if (own.size() > 4) own.erase(own.begin());  // closes the oldest
          break;
        }
        case 1: {  // close someone's manager
          ManagerRef m = pick(s, rng);
          if (m.defined() && rng() % 4 == 0) m.close();
          break;
        }
        case 2: {  // move an array between managers
          ManagerRef m = pick(s, rng);
          if (m.defined() && !kept.empty()) kept[rng() % kept.size()].attach(m);
          break;
        }
        default: {  // create arrays at the three known sites; keep some
          ManagerRef m = pick(s, rng);
          if (!m.defined()) m = base;
          NDArray a = m.zeros({16}); s.lines.f32 = __LINE__;
          NDArray b = m.ones({4}, DataType::int64); s.lines.i64 = __LINE__;
          NDArray v = a.reshape({4, 4}); s.lines.view = __LINE__;
          s.created.fetch_add(3, std::memory_order_relaxed);
          if (rng() % 2) kept.push_back(a);
          if (rng() % 3 == 0) kept.push_back(v);
          while (kept.size() > 512) kept.pop_front();
          break;
        }
      }
    } catch (const ArrayClosed&) {
    } catch (const ManagerClosed&) {
    }
  }
}

// Checks one snapshot for torn or duplicated records; returns false on any.
bool consistent(const debug::Snapshot& snap, const Lines& lines) {
  std::set<Uuid> seen;
  for (const debug::ArrayRecord& r : snap.arrays) {
    if (r.manager >= snap.managers.size() || r.site >= snap.sites.size()) return false;
    if (!seen.insert(r.uuid).second) return false;
    const debug::SiteInfo& site = snap.site_of(r);
    if (!test::ends_with(site.file, "stress_test.cpp")) continue;
    int line = int(site.line);
    if (line == lines.f32 && r.bytes != 64) return false;
    if (line == lines.i64 && r.bytes != 32) return false;
    if (line == lines.view && r.bytes != 0) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("snapshots, orphan reports, dumps and diffs while other threads work") {
  test::AutoClose restore(false);
  Shared s;
  NDManager base = NDManager::new_base_manager("debug-stress");
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) threads.emplace_back([&, t] { worker(s, base, 1000 + t); });
  std::thread toggler([&] {
    std::mt19937 rng(7);
    while (!s.stop.load(std::memory_order_relaxed)) {
      rng() % 2 ? gc::enable() : gc::disable();
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
  });

  int snapshots = 0, bad = 0;
  std::size_t max_arrays = 0;
  debug::Snapshot previous = debug::snapshot();
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  while (std::chrono::steady_clock::now() < until || snapshots < 20) {
    debug::Snapshot snap = debug::snapshot();
    ++snapshots;
    if (!consistent(snap, s.lines)) ++bad;
    max_arrays = std::max(max_arrays, snap.arrays.size());
    debug::Diff d = debug::diff(previous, snap);
    if (d.after.arrays != snap.arrays.size()) ++bad;
    debug::OrphanReport o = debug::orphans();
    std::uint64_t in_groups = 0;
    for (const debug::OrphanGroup& g : o.groups) in_groups += g.uuids.size();
    if (in_groups != o.arrays) ++bad;
    if (snapshots % 4 == 0) {
      debug::Dump dump = debug::inspect(base, true);
      std::uint64_t listed = dump.root.arrays.size();
      if (listed != dump.root.array_count) ++bad;  // one pass under the mutex: they agree
      (void)dump.to_text();
    }
    if (snapshots % 8 == 0) {
      if (!(debug::Snapshot::from_json(snap.to_json()) == snap)) ++bad;
    }
    previous = std::move(snap);
  }
  s.stop = true;
  for (std::thread& t : threads) t.join();
  toggler.join();
  MESSAGE(snapshots << " snapshots (up to " << max_arrays << " arrays) while " << s.created.load()
                    << " arrays were created");
  CHECK(bad == 0);
  CHECK(snapshots >= 20);
  CHECK(s.created.load() > 0);
  {
    std::lock_guard lock(s.mu);
    s.managers.clear();
  }
  base.close();
  debug::Snapshot last = debug::snapshot();
  for (const std::string& path : last.managers) CHECK(path.rfind("system/debug-stress", 0) != 0);
}

TEST_CASE("snapshots while other threads cycle, nest and destroy workspaces") {
  test::AutoClose restore(false);
  NDManager base = NDManager::new_base_manager("debug-ws-stress");
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> cycles{0};
  std::atomic<int> snapshots{0};
  // Each cycle leaves an array in `base` (auto-close is off), and every
  // snapshot reads them all: a worker runs at most kAhead cycles per
  // snapshot taken, so that the snapshots do not slow down as the workers
  // outrun them (on a loaded machine under TSan they did: 0.7 s alone, 17 s
  // beside another suite).
  constexpr int kAhead = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      workspace::Config cfg;
      cfg.learning = t == 0 ? workspace::Learning::first_loop : workspace::Learning::none;
      cfg.initial_size = 4096;
      cfg.reset = t == 0 ? workspace::Reset::block_left : workspace::Reset::end_of_buffer;
      std::vector<NDArray> kept;  // arrays of earlier cycles: closed by the workspace, never by the test
      for (int i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        while (i >= kAhead * (snapshots.load() + 1) && !stop.load(std::memory_order_relaxed))
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        {
          workspace::Scope outer = workspace::activate(cfg, "STRESS_OUTER");
          NDArray a = base.ones({1 + i % 50});
          {
            workspace::Scope inner = workspace::activate(cfg, "STRESS_INNER");
            NDArray b = a.add(a);
            kept.push_back(workspace::leverage_to(b, "STRESS_OUTER"));
            kept.push_back(b.reshape({b.size(), 1}));
          }
          kept.push_back(workspace::detach(a));
        }
        if (kept.size() > 30) kept.erase(kept.begin(), kept.begin() + 10);
        if (i % 20 == 19) workspace::destroy_all_for_this_thread();
        cycles.fetch_add(1, std::memory_order_relaxed);
        std::this_thread::sleep_for(std::chrono::microseconds(50));  // leave the snapshots a core
      }
      kept.clear();
      workspace::destroy_all_for_this_thread();
    });

  int bad = 0;
  while (snapshots < 20 || cycles.load(std::memory_order_relaxed) < 100) {
    debug::Snapshot snap = debug::snapshot();
    ++snapshots;
    for (const debug::ArrayRecord& a : snap.arrays)
      if (a.in_workspace() && a.workspace >= snap.workspaces.size()) ++bad;
    // Every group a diff puts in a workspace names one that either snapshot listed.
    const debug::Snapshot next = debug::snapshot();
    for (const debug::DiffGroup& g : debug::diff(snap, next).in_workspaces().groups) {
      auto named = [&](const workspace::Info& w) { return w.name == g.workspace; };
      if (std::none_of(snap.workspaces.begin(), snap.workspaces.end(), named) &&
          std::none_of(next.workspaces.begin(), next.workspaces.end(), named))
        ++bad;
    }
    (void)snap.to_text();
    if (!(debug::Snapshot::from_json(snap.to_json()) == snap)) ++bad;
    (void)memory::stats(Device::cpu());
    if (snapshots % 5 == 0) {
      std::ostringstream out;
      debug::dump(out);
    }
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  MESSAGE(snapshots.load() << " snapshots while " << cycles.load() << " workspace cycles ran on 2 threads");
  CHECK(bad == 0);
  CHECK(cycles.load() > 0);
  for (const workspace::Info& w : workspace::list()) CHECK(w.name.rfind("STRESS_", 0) != 0);
}
