// Reliability stress (issue 5): threads pass handles to each other through
// mailboxes while they create, copy, compute, drop, attach, temp_attach,
// ret(), list managers' arrays, close managers and toggle auto-close.
//
// What it proves, beyond tests/core/stress_test.cpp (which only tolerates
// errors): every array is filled with a known value, so a use is checked for
// its content, not only for not crashing. Arrays of a thread's "stable"
// manager, which no one closes before the end, must stay readable with their
// value wherever their handles travel (invariant 1 of docs/design.md §3: auto-close
// never closes an array a handle reaches); arrays of the shared managers may
// be closed by a manager close, never by auto-close or sweep. At the end,
// after every manager closes, host bytes and open arrays are back where they
// started (invariant 4). Run under ThreadSanitizer by tools/test.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/registry.hpp"
#include "support/sanitizers.hpp"
#include "test_util.hpp"

using namespace ndgc;

namespace {

#if NDGC_TSAN || NDGC_ASAN
constexpr int kIterations = 50000;  // sanitizers run 5-15x slower
#else
constexpr int kIterations = 200000;
#endif
constexpr int kThreads = 4;
constexpr int kShared = 3;

// A handle and what its array must hold.
struct Item {
  NDArray array;
  float value = 0;
  bool stable = false;  // in a manager nobody closes before the end
};

struct Mailbox {
  std::mutex mu;
  std::deque<Item> items;
};

struct Shared {
  std::mutex mu;
  std::vector<ManagerRef> managers;  // shared managers any thread may use or close
  Mailbox mailboxes[kThreads];
  std::vector<Item> held[kThreads];  // each worker's own items, checked again after the join
  ManagerRef stable[kThreads];
  std::atomic<long> ops{0}, checks{0}, closed_by_manager{0};
  std::atomic<int> violations{0};
  std::mutex log_mu;
  std::vector<std::string> log;  // the first violations, for the report
};

void violation(Shared& s, const std::string& what) {
  if (s.violations.fetch_add(1) < 8) {
    std::lock_guard lock(s.log_mu);
    s.log.push_back(what);
  }
}

// Reads `item` and compares every element with its value. A stable item must
// be readable; any item closed by auto-close or sweep breaks invariant 1.
void check(Shared& s, const Item& item) {
  try {
    std::vector<float> v = item.array.to_vector<float>();
    for (float x : v)
      if (x != item.value) {
        violation(s, "array holds " + std::to_string(x) + ", expected " + std::to_string(item.value));
        break;
      }
    ++s.checks;
  } catch (const ArrayClosed& e) {
    std::string what = e.what();
    if (item.stable || what.find("auto-close") != std::string::npos || what.find("sweep") != std::string::npos)
      violation(s, what);
    else
      ++s.closed_by_manager;
  } catch (const Error& e) {  // e.g. a stale handle resolving to another array
    violation(s, std::string("unexpected error: ") + e.what());
  }
}

// Runs f, tolerating what concurrent manager closes legitimately cause.
template <class F>
void tolerant(Shared& s, F&& f) {
  try {
    f();
  } catch (const ArrayClosed& e) {
    if (test::closed_by_reclaim(e)) violation(s, e.what());
  } catch (const ManagerClosed&) {
  } catch (const Error& e) {  // nothing else is legitimate here
    violation(s, std::string("unexpected error: ") + e.what());
  }
}

ManagerRef pick_shared(Shared& s, std::mt19937& rng) {
  std::lock_guard lock(s.mu);
  return s.managers[rng() % s.managers.size()];
}

void worker(Shared& s, int self, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<Item>& mine = s.held[self];
  const ManagerRef stable = s.stable[self];
  auto value = [&] { return float(1 + rng() % 16); };
  auto length = [&] { return std::int64_t(1 + rng() % 48); };
  for (int i = 0; i < kIterations; ++i) {
    switch (rng() % 14) {
      case 0: {  // create in the stable manager, fill in place
        float v = value();
        mine.push_back({stable.zeros({length()}), v, true});
        mine.back().array.fill_(v);
        break;
      }
      case 1:  // create in a shared manager
        tolerant(s, [&] {
          float v = value();
          mine.push_back({pick_shared(s, rng).full({length()}, v), v, false});
        });
        break;
      case 2:  // compute: temporaries join a's manager and die at once
        if (!mine.empty()) {
          const Item a = mine[rng() % mine.size()];
          const Item b = mine[rng() % mine.size()];
          tolerant(s, [&] {
            NDArray bb = b.array.sum().reshape({1});  // broadcasts over any length
            NDArray out = a.array.add(bb).sub(bb);
            mine.push_back({out, a.value, a.stable});
          });
        }
        break;
      case 3:  // a view: shares a's buffer
        if (!mine.empty()) {
          const Item a = mine[rng() % mine.size()];
          tolerant(s, [&] { mine.push_back({a.array.reshape({a.array.size(), 1}), a.value, a.stable}); });
        }
        break;
      case 4:
      case 5: {  // send a copy to another thread
        if (mine.empty()) break;
        int to = int(rng() % kThreads);
        std::lock_guard lock(s.mailboxes[to].mu);
        s.mailboxes[to].items.push_back(mine[rng() % mine.size()]);
        break;
      }
      case 6: {  // receive what others sent, check it, keep some
        std::deque<Item> got;
        {
          std::lock_guard lock(s.mailboxes[self].mu);
          got.swap(s.mailboxes[self].items);
        }
        for (Item& item : got) {
          check(s, item);
          if (rng() % 2) mine.push_back(std::move(item));
        }
        break;
      }
      case 7:  // drop
        if (!mine.empty()) mine.erase(mine.begin() + long(rng() % mine.size()));
        break;
      case 8:  // check one of mine
        if (!mine.empty()) check(s, mine[rng() % mine.size()]);
        break;
      case 9: {  // move a shared array to another shared manager, or lend it to a short-lived borrower
        if (mine.empty()) break;
        Item& a = mine[rng() % mine.size()];
        if (a.stable) break;
        tolerant(s, [&] {
          ManagerRef to = pick_shared(s, rng);
          if (rng() % 2) {
            a.array.attach(to);
          } else {
            NDManager borrower = to.new_sub_manager("borrower");
            a.array.temp_attach(borrower);
            (void)a.array.sum();
          }  // the borrower closes: the array goes back to its owner
        });
        break;
      }
      case 10:  // ret(): a result outlives the sub-manager that made it
        tolerant(s, [&] {
          bool in_stable = rng() % 2;
          ManagerRef parent = in_stable ? stable : pick_shared(s, rng);
          NDManager step = parent.new_sub_manager("step");
          float v = value();
          NDArray t = step.full({length()}, v);
          NDArray r = step.ret(t.mul(2.0).sub(t));
          mine.push_back({r, v, in_stable});
        });
        break;
      case 11:  // a library-made listing of live arrays (lock semantics against the reclaim)
        if (rng() % 8 == 0) tolerant(s, [&] { (void)pick_shared(s, rng).managed_arrays().size(); });
        break;
      case 12:  // now and then, close a shared manager and open a fresh one in its place
        if (rng() % 64 == 0) test::replace_and_close_one(s.mu, s.managers, rng, "shared");
        break;
      case 13:  // toggle auto-close, drain, sweep
        switch (rng() % 64) {
          case 0: gc::enable(); break;
          case 1: gc::disable(); break;
          case 2: gc::poll(); break;
          case 3: gc::sweep(); break;
          default: break;
        }
        break;
    }
    if (mine.size() > 256) mine.erase(mine.begin(), mine.begin() + 64);
    ++s.ops;
  }
}

}  // namespace

TEST_CASE("reliability stress: handles through mailboxes, closes and auto-close toggles keep invariants 1 and 4") {
  test::AutoClose restore(true);
  gc::sweep();
  const std::uint64_t bytes_before = test::host_bytes();
  const std::uint64_t open_before = detail::Registry::instance().open_arrays();
  Shared s;
  std::vector<NDManager> stables;
  for (int t = 0; t < kThreads; ++t) {
    stables.push_back(NDManager::new_base_manager("stable-" + std::to_string(t)));
    s.stable[t] = stables.back();
  }
  for (int i = 0; i < kShared; ++i) s.managers.push_back(NDManager::new_base_manager("shared").release());

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, std::ref(s), t, 4242u + unsigned(t));
  for (std::thread& t : threads) t.join();

  // Invariant 1 once more, at rest: everything still held is intact.
  for (int t = 0; t < kThreads; ++t) {
    for (const Item& item : s.held[t]) check(s, item);
    for (const Item& item : s.mailboxes[t].items) check(s, item);
  }
  MESSAGE("reliability stress: " << kThreads << " threads x " << kIterations << " operations = " << s.ops.load()
                                 << " operations; " << s.checks.load() << " content checks, "
                                 << s.closed_by_manager.load() << " uses of arrays closed with their manager");
  for (const std::string& line : s.log) MESSAGE("violation: " << line);
  CHECK(s.violations.load() == 0);
  CHECK(s.ops.load() == long(kThreads) * kIterations);
  CHECK(s.checks.load() > 0);

  for (int t = 0; t < kThreads; ++t) {
    s.held[t].clear();
    s.mailboxes[t].items.clear();
  }
  for (ManagerRef& m : s.managers) m.close();
  s.managers.clear();
  stables.clear();
  gc::poll();
  CHECK(test::host_bytes() == bytes_before);                              // invariant 4
  CHECK(detail::Registry::instance().open_arrays() == open_before);
}
