// Keys under the collector (src/trace/key_heap.cpp): leaked handles are
// found and their arrays closed; handles the collector can see never are.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "trace_util.hpp"

using namespace ndgc;
using test::collect_until;
using test::TraceOn;

namespace {

// Returns only the array's UUID: the handle itself is forgotten on the heap.
[[gnu::noinline]] Uuid leak_new_handle(const ManagerRef& m, std::int64_t n) {
  auto* lost = new NDArray(m.zeros({n}));
  return lost->uid();
}

}  // namespace

TEST_CASE("a forgotten new NDArray: its array is closed, its bytes are back, it counts as leaked") {
  test::run_clean([] {
    TraceOn on;
    test::settle();
    NDManager m = NDManager::new_base_manager("forgotten");
    const std::uint64_t before = test::host_bytes();
    const std::uint64_t leaked = gc::stats().leaked_handles;
    (void)leak_new_handle(m, 4096);
    CHECK(test::host_bytes() == before + 4096 * 4);
    CHECK(m.array_count() == 1);
    REQUIRE(collect_until([&] { return m.array_count() == 0; }));
    CHECK(m.managed_arrays().size() == 0);
    CHECK(test::host_bytes() == before);
    CHECK(gc::stats().leaked_handles == leaked + 1);
  });
}

TEST_CASE("handles the program keeps survive many collections") {
  TraceOn on;
  test::settle();
  NDManager m = NDManager::new_base_manager("kept");
  std::vector<NDArray> kept;
  for (int i = 0; i < 200; ++i) kept.push_back(m.ones({8}));
  const std::uint64_t leaked = gc::stats().leaked_handles;
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 200; ++i) (void)m.zeros({8}).add(1.0);  // garbage: orphans, reclaimed by refcount
    test::wipe_stack();
    gc::collect();
  }
  CHECK(gc::stats().leaked_handles == leaked);
  CHECK(m.array_count() == kept.size());
  for (const NDArray& a : kept) CHECK(a.sum().item<float>() == 8.0f);
}

TEST_CASE("orphans keep being reclaimed by reference counting under the detector") {
  TraceOn on;
  test::settle();
  NDManager m = NDManager::new_base_manager("orphans");
  const std::uint64_t before = test::host_bytes();
  const auto s0 = gc::stats();
  for (int i = 0; i < 1000; ++i) (void)m.ones({16}).mul(3.0);
  gc::poll();
  CHECK(m.array_count() == 0);
  CHECK(test::host_bytes() == before);
  gc::collect();  // their keys' finalizers find nothing leaked
  CHECK(gc::stats().leaked_handles == s0.leaked_handles);
  CHECK(gc::stats().reclaimed - s0.reclaimed == 2000);
}

TEST_CASE("a handle hidden in malloc memory: its array may be closed; using it then throws ArrayClosed") {
  test::run_clean([] {
    TraceOn on;
    NDManager m = NDManager::new_base_manager("hidden");
    void* raw = std::malloc(sizeof(NDArray));
    REQUIRE(raw);
    auto* hidden = ::new (raw) NDArray(m.arange(0, 10));  // only malloc memory holds it
    collect_until([&] { return hidden->is_closed(); }, 3);
    bool ok = false;
    try {
      ok = hidden->sum().item<float>() == 45.0f;  // works if the collector happened to see it
    } catch (const ArrayClosed& e) {
      std::string what = e.what();
      CHECK(what.find("trace detector") != std::string::npos);
      CHECK(what.find("malloc") != std::string::npos);
      CHECK(hidden->is_closed());
      ok = true;
    }
    CHECK(ok);
    CHECK(hidden->handle_count() == 1);  // the key outlived the close: never dangling
    hidden->~NDArray();
    std::free(raw);
    gc::collect();
    CHECK(m.array_count() == 0);
  });
}

// Found once, finalized once: a key found unreachable is kept reachable (the
// kept set, key_heap.cpp), so later collections leave it alone. It used to
// re-register its finalizer instead, and be finalized by every collection.
TEST_CASE("a leaked handle is counted and finalized once however many collections follow") {
  test::run_clean([] {
    TraceOn on;
    test::settle();
    NDManager m = NDManager::new_base_manager("once");
    void* raw = std::malloc(sizeof(NDArray));
    auto* hidden = ::new (raw) NDArray(m.ones({4}));
    const std::uint64_t leaked = gc::stats().leaked_handles;
    REQUIRE(collect_until([&] { return hidden->is_closed(); }));
    const std::uint64_t finalized = trace::stats().finalizers_run;
    for (int i = 0; i < 5; ++i) gc::collect();
    CHECK(gc::stats().leaked_handles == leaked + 1);
    CHECK(trace::stats().finalizers_run == finalized);
    NDArray copy = *hidden;  // copies of a leaked handle still work as handles
    CHECK(copy.handle_count() == 2);
    CHECK_THROWS_AS(copy.shape(), ArrayClosed);
    hidden->~NDArray();
    std::free(raw);
  });
}

TEST_CASE("a key found unreachable while the detector is off is kept, not reported; its array stays open") {
  test::run_clean([] {
    test::AutoClose refcount(true);  // auto-close on, reference counting only
    NDManager m = NDManager::new_base_manager("detector-off");
    const std::uint64_t before = test::host_bytes();
    void* raw = std::malloc(sizeof(NDArray));
    REQUIRE(raw);
    NDArray* hidden = nullptr;
    {
      TraceOn on;  // a traced key, then back to reference counting
      hidden = ::new (raw) NDArray(m.ones({4}));
    }
    const std::uint64_t leaked = gc::stats().leaked_handles;
    const std::uint64_t finalized = trace::stats().finalizers_run;
    REQUIRE(collect_until([&] { return trace::stats().finalizers_run > finalized; }));  // found unreachable
    for (int i = 0; i < 3; ++i) {
      gc::collect();
      test::churn();  // new keys would take a key's memory had the collector reclaimed it
    }
    CHECK(gc::stats().leaked_handles == leaked);
    CHECK(hidden->handle_count() == 1);
    CHECK_FALSE(hidden->is_closed());
    CHECK(hidden->sum().item<float>() == 4.0f);  // the key was kept: the handle still resolves
    hidden->~NDArray();  // the last handle: reference counting closes the array, the kept key is freed
    std::free(raw);
    gc::poll();
    test::collect_until([&] { return m.array_count() == 0; }, 3);
    CHECK(m.array_count() == 0);
    CHECK(test::host_bytes() == before);
  });
}

TEST_CASE("keys made before the detector was on are freed by the ordinary heap") {
  NDManager m = NDManager::new_base_manager("before");
  NDArray early = m.ones({2});  // a key from the ordinary heap
  {
    TraceOn on;
    NDArray late = m.ones({2});  // a key from the collector's heap
    early = NDArray();
    late = NDArray();
    gc::collect();
    CHECK(m.array_count() == 0);
  }
  NDArray after = m.ones({2});  // and from the ordinary heap again
  CHECK(after.sum().item<float>() == 2.0f);
}
