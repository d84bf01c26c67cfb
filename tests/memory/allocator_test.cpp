// Memory accounting, limits and the out-of-memory path (docs/design.md §6).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "memory/allocator.hpp"
#include "test_util.hpp"

using namespace ndgc;

TEST_CASE("every allocation and free is counted") {
  memory::Stats s0 = memory::stats(Device::cpu());
  {
    NDManager m = NDManager::new_base_manager("count");
    NDArray a = m.zeros({1000});
    memory::Stats s1 = memory::stats(Device::cpu());
    CHECK(s1.current_bytes - s0.current_bytes == 4000);
    CHECK(s1.allocated_bytes - s0.allocated_bytes == 4000);
    CHECK(s1.allocations - s0.allocations == 1);
    CHECK(s1.peak_bytes >= s1.current_bytes);
  }
  memory::Stats s2 = memory::stats(Device::cpu());
  CHECK(s2.current_bytes == s0.current_bytes);
  CHECK(s2.freed_bytes - s0.freed_bytes == 4000);
  CHECK(s2.frees - s0.frees == 1);
}

TEST_CASE("reset_peak brings the peak down to the current use") {
  {
    NDManager m = NDManager::new_base_manager("peak");
    NDArray big = m.zeros({1 << 16});
  }
  memory::reset_peak(Device::cpu());
  memory::Stats s = memory::stats(Device::cpu());
  CHECK(s.peak_bytes == s.current_bytes);
}

TEST_CASE("over the limit: OutOfMemory with requested bytes, limit, use, holders and a hint") {
  NDManager m = NDManager::new_base_manager("hog");
  NDArray held = m.zeros({1 << 18});  // 1 MiB
  const std::uint64_t in_use = test::host_bytes();
  memory::set_limit(Device::cpu(), in_use + 1000);
  try {
    NDArray too_big = m.zeros({1 << 10});
    FAIL("no OutOfMemory");
  } catch (const OutOfMemory& e) {
    CHECK(e.requested() == 4096);
    CHECK(e.limit() == in_use + 1000);
    CHECK(e.in_use() == in_use);
    std::string what = e.what();
    CHECK(what.find("4.0 KiB") != std::string::npos);
    CHECK(what.find("system/hog") != std::string::npos);  // the largest holder
    CHECK(what.find("NDGC_MAX_BYTES") != std::string::npos);
  }
  memory::set_limit(Device::cpu(), 0);
  CHECK(m.array_count() == 1);
  CHECK(test::host_bytes() == in_use);
}

TEST_CASE("a size no allocator can serve: OutOfMemory naming the size, nothing counted or handed out") {
  // Near SIZE_MAX the accounting and the block cache's header arithmetic
  // would wrap around to a small size and hand out a small buffer.
  memory::DeviceAllocator& alloc = memory::allocator(Device::cpu());
  const memory::Stats before = memory::stats(Device::cpu());
  for (std::size_t bytes : {SIZE_MAX, SIZE_MAX - 10, SIZE_MAX - 63, std::size_t(PTRDIFF_MAX) + 1}) {
    CAPTURE(bytes);
    try {
      (void)alloc.allocate(bytes);
      FAIL("no OutOfMemory");
    } catch (const OutOfMemory& e) {
      CHECK(e.requested() == bytes);
      std::string what = e.what();
      CHECK(what.find(std::to_string(bytes) + " bytes on cpu") != std::string::npos);
      CHECK(what.find("more than any allocator can serve") != std::string::npos);
    }
  }
  const memory::Stats after = memory::stats(Device::cpu());
  CHECK(after.current_bytes == before.current_bytes);
  CHECK(after.peak_bytes == before.peak_bytes);
  CHECK(after.allocations == before.allocations);
  CHECK(after.oom_count == before.oom_count + 4);
}

TEST_CASE("over the limit, auto-close's queue is drained first and the allocation succeeds") {
  test::AutoClose on(true);
  NDManager m = NDManager::new_base_manager("drain-first");
  const std::uint64_t base = test::host_bytes();
  memory::set_limit(Device::cpu(), base + 3 * 4096 + 100);
  for (int i = 0; i < 20; ++i) {
    std::vector<NDArray> step{m.zeros({1024}), m.zeros({1024})};
    // the handles die here; the next allocation drains them when it hits the limit
  }
  memory::set_limit(Device::cpu(), 0);
  gc::poll();
  CHECK(test::host_bytes() == base);
}

TEST_CASE("fault injection makes the n-th allocation fail") {
  NDManager m = NDManager::new_base_manager("faults");
  memory::fail_allocation_after(2);
  NDArray first = m.zeros({4});
  CHECK_THROWS_AS(m.zeros({4}), OutOfMemory);
  NDArray third = m.zeros({4});
  CHECK(m.array_count() == 2);
}

TEST_CASE("the physical limit is checked against the resident size") {
  CHECK(memory::resident_bytes() > 0);
  memory::set_physical_limit(1);  // below any real process
  NDManager m = NDManager::new_base_manager("rss");
  CHECK_THROWS_WITH_AS(m.zeros({1 << 20}), doctest::Contains("resident size"), OutOfMemory);
  memory::set_physical_limit(0);
  CHECK(memory::physical_limit() == 0);
  NDArray ok = m.zeros({1 << 20});
}

TEST_CASE("an unknown device is a typed error") {
  // No CUDA engine in this program: InvalidArgument naming the device (support/gpu_probe.cpp).
  CHECK_THROWS_WITH_AS(memory::stats(Device::gpu(0)), doctest::Contains("gpu(0)"), InvalidArgument);
  CHECK_THROWS_AS(memory::stats(Device::gpu(99)), InvalidArgument);
  CHECK_THROWS_WITH_AS((void)NDManager::new_base_manager("g", Device::gpu(0)), doctest::Contains("gpu(0)"),
                       InvalidArgument);
}
