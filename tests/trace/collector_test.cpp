// When the collector runs (src/trace/collector.cpp): on gc::collect(), within
// the collect window from library calls, and under memory pressure.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "trace_util.hpp"

using namespace ndgc;
using test::TraceOn;

namespace {

[[gnu::noinline]] void leak(const ManagerRef& m, std::int64_t n) { (void)new NDArray(m.zeros({n})); }

class Window {
 public:
  explicit Window(std::chrono::milliseconds w) : old_(gc::collect_window()) { gc::set_collect_window(w); }
  ~Window() { gc::set_collect_window(old_); }

 private:
  std::chrono::milliseconds old_;
};

class Limit {
 public:
  explicit Limit(std::uint64_t bytes) : old_(memory::limit(Device::cpu())) { memory::set_limit(Device::cpu(), bytes); }
  ~Limit() { memory::set_limit(Device::cpu(), old_); }

 private:
  std::uint64_t old_;
};

}  // namespace

TEST_CASE("gc::collect() collects, then drains") {
  TraceOn on;
  NDManager m = NDManager::new_base_manager("collect");
  const auto t0 = trace::stats();
  { NDArray orphan = m.ones({3}); }
  CHECK(gc::collect() >= 1);  // the orphan, at least
  CHECK(m.array_count() == 0);
  CHECK(trace::stats().collections > t0.collections);
}

TEST_CASE("library calls collect once the collect window has passed") {
  test::run_clean([] {
    TraceOn on;
    Window w(std::chrono::milliseconds(20));
    NDManager m = NDManager::new_base_manager("window");
    leak(m, 16);
    test::wipe_stack();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (m.array_count() != 0 && std::chrono::steady_clock::now() < deadline) {
      NDManager step = m.new_sub_manager("step");  // ordinary work; no gc::collect()
      (void)step.ones({4}).add(1.0);
      test::wipe_stack();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    CHECK(m.array_count() == 0);
  });
}

TEST_CASE("the collect window is a setting; zero leaves collections to Boehm and gc::collect()") {
  Window w(std::chrono::milliseconds(0));
  CHECK(gc::collect_window() == std::chrono::milliseconds(0));
  gc::set_collect_window(std::chrono::milliseconds(250));
  CHECK(gc::collect_window() == std::chrono::milliseconds(250));
}

TEST_CASE("before OutOfMemory: collect, drain, retry") {
  test::run_clean([] {
    TraceOn on;
    Window w(std::chrono::milliseconds(0));
    NDManager m = NDManager::new_base_manager("pressure");
    const std::uint64_t base = test::host_bytes();
    Limit limit(base + (3u << 20));
    leak(m, (2 << 20) / 4);  // 2 MiB held by a forgotten handle
    test::wipe_stack();
    // Only a collection frees it; the allocator's pressure handler collects.
    NDArray big;
    for (int attempt = 0; attempt < 5 && !big.defined(); ++attempt) {
      try {
        big = m.zeros({(2 << 20) / 4});
      } catch (const OutOfMemory&) {
        test::wipe_stack();  // a stale pointer kept it: try again
      }
    }
    REQUIRE(big.defined());
    CHECK(m.array_count() == 1);
  });
}
