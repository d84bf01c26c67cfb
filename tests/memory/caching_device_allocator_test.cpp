// CachingDeviceAllocator over a host-backed fake device: accounting, limits,
// the OOM ladder and its message, memory::empty_cache / stats / set_limit for
// a registered GPU allocator, and NDGC_GPU_MAX_BYTES.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include <unistd.h>

#include "core/array_impl.hpp"
#include "core/publish.hpp"
#include "memory/caching_device_allocator.hpp"
#include "memory/host_segment_source.hpp"
#include "sim_gpu.hpp"
#include "test_util.hpp"

using namespace ndgc;
using memory::CachingDeviceAllocator;
using memory::HostSegmentSource;

namespace {

constexpr std::size_t kDeviceKiB = 1024, kDeviceMiB = 1024 * 1024;

using test::FakeGpu;  // tests/sim_gpu.hpp
using Registered = test::RegisteredAllocator;

// An uninitialised float32 array on gpu(0) in `m`: core needs no engine for
// that, only the device's allocator.
NDArray gpu_array(const NDManager& m, std::size_t bytes) {
  auto impl = detail::ArrayImpl::make(Shape{std::int64_t(bytes / 4)}, DataType::float32, Device::gpu(0),
                                      Site::current());
  return detail::publish(std::move(impl), *m.impl(), detail::Join::create, "gpu_array");
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("current_bytes counts requested bytes; reserved, cached and segments come from the cache") {
  FakeGpu gpu(64 * kDeviceMiB);
  void* a = gpu.alloc.allocate(1000);
  void* b = gpu.alloc.allocate(3 * kDeviceMiB);
  memory::Stats s = gpu.alloc.stats();
  CHECK(s.current_bytes == 1000 + 3 * kDeviceMiB);
  CHECK(s.reserved_bytes == 22 * kDeviceMiB);
  CHECK(s.cached_bytes == 22 * kDeviceMiB - 1024 - 3 * kDeviceMiB);
  CHECK(s.segments == 2);
  CHECK(s.active_blocks == 2);
  CHECK(s.allocations == 2);
  gpu.alloc.deallocate(a, 1000);
  gpu.alloc.deallocate(b, 3 * kDeviceMiB);
  s = gpu.alloc.stats();
  CHECK(s.current_bytes == 0);
  CHECK(s.cached_bytes == 22 * kDeviceMiB);
  CHECK(s.active_blocks == 0);
  CHECK(s.frees == 2);
  gpu.alloc.empty_cache();
  s = gpu.alloc.stats();
  CHECK(s.reserved_bytes == 0);
  CHECK(s.segments == 0);
  CHECK(gpu.source->used_bytes() == 0);
}

TEST_CASE("allocations use the source's current stream; a block on another stream waits for its event") {
  FakeGpu gpu(64 * kDeviceMiB);
  HostSegmentSource::set_thread_stream(1);
  void* p = gpu.alloc.allocate(4096);
  void* guard = gpu.alloc.allocate(4096);
  gpu.alloc.record_stream(p, 2);
  gpu.alloc.deallocate(p, 4096);
  void* q = gpu.alloc.allocate(4096);
  CHECK(q != p);
  gpu.source->complete_events(2);
  void* r = gpu.alloc.allocate(4096);
  CHECK(r == p);
  HostSegmentSource::set_thread_stream(0);
  void* other = gpu.alloc.allocate(4096);  // stream 0 has no segment yet
  CHECK(gpu.alloc.stats().segments == 2);
  for (void* x : {guard, q, r, other}) gpu.alloc.deallocate(x, 4096);
}

TEST_CASE("a device full of cached segments serves a request after giving them back") {
  FakeGpu gpu(21 * kDeviceMiB);
  HostSegmentSource::set_thread_stream(1);
  gpu.alloc.deallocate(gpu.alloc.allocate(5 * kDeviceMiB), 5 * kDeviceMiB);  // 20 kDeviceMiB cached for stream 1
  HostSegmentSource::set_thread_stream(2);
  void* p = gpu.alloc.allocate(4096);  // stream 2 needs a segment of its own: 22 kDeviceMiB > 21 kDeviceMiB
  HostSegmentSource::set_thread_stream(0);
  CHECK(p != nullptr);
  memory::Stats s = gpu.alloc.stats();
  CHECK(s.reserved_bytes == 2 * kDeviceMiB);
  CHECK(s.segments == 1);
  CHECK(s.alloc_retries == 1);
  CHECK(s.oom_count == 0);
  gpu.alloc.deallocate(p, 4096);
}

TEST_CASE("over a GPU limit: OutOfMemory names requested bytes, the limit, capacity, reserved and what to try") {
  FakeGpu gpu(64 * kDeviceMiB);
  gpu.alloc.set_limit(1 * kDeviceMiB);
  void* held = gpu.alloc.allocate(512 * kDeviceKiB);
  try {
    gpu.alloc.allocate(768 * kDeviceKiB);
    FAIL("no OutOfMemory");
  } catch (const OutOfMemory& e) {
    CHECK(e.requested() == 768 * kDeviceKiB);
    CHECK(e.limit() == 1 * kDeviceMiB);
    CHECK(e.in_use() == 512 * kDeviceKiB);
    const std::string what = e.what();
    CHECK(contains(what, "768.0 KiB (786432 bytes) on gpu(0)"));
    CHECK(contains(what, "limit of 1.0 MiB"));
    CHECK(contains(what, "64.0 MiB in all"));         // capacity
    CHECK(contains(what, "2.0 MiB reserved in 1 segments"));
    CHECK(contains(what, "62.0 MiB free"));           // what the driver says
    CHECK(contains(what, "NDGC_GPU_MAX_BYTES"));
    CHECK(contains(what, "memory::empty_cache"));
    CHECK(contains(what, "smaller batch"));
    CHECK(contains(what, "auto-close"));
  }
  memory::Stats s = gpu.alloc.stats();
  CHECK(s.oom_count == 1);
  CHECK(s.alloc_retries == 1);
  CHECK(s.current_bytes == 512 * kDeviceKiB);
  gpu.alloc.set_limit(0);
  void* fits = gpu.alloc.allocate(768 * kDeviceKiB);
  gpu.alloc.deallocate(fits, 768 * kDeviceKiB);
  gpu.alloc.deallocate(held, 512 * kDeviceKiB);
}

TEST_CASE("a full device without a limit: OutOfMemory says the capacity and what the driver has free") {
  FakeGpu gpu(4 * kDeviceMiB);
  CHECK_THROWS_WITH_AS(gpu.alloc.allocate(8 * kDeviceMiB),
                       doctest::Contains("gpu(0) has 4.0 MiB in all; ndgc holds 0 B in blocks handed out"),
                       OutOfMemory);
  CHECK_THROWS_WITH_AS(gpu.alloc.allocate(8 * kDeviceMiB), doctest::Contains("the driver reports 4.0 MiB free"),
                       OutOfMemory);
  memory::Stats s = gpu.alloc.stats();
  CHECK(s.oom_count == 2);
  CHECK(s.current_bytes == 0);
  // Each try: the cache's free-and-retry plus the ladder's retry (which repeats it).
  CHECK(s.alloc_retries == 2 * 3);
}

TEST_CASE("memory:: stats, set_limit and empty_cache reach a registered GPU allocator") {
  FakeGpu gpu(64 * kDeviceMiB);
  {
    Registered reg(gpu.alloc);
    void* p = memory::allocator(Device::gpu(0)).allocate(4096);
    memory::allocator(Device::gpu(0)).deallocate(p, 4096);
    memory::Stats s = memory::stats(Device::gpu(0));
    CHECK(s.current_bytes == 0);
    CHECK(s.cached_bytes == 2 * kDeviceMiB);
    CHECK(s.reserved_bytes == 2 * kDeviceMiB);
    memory::empty_cache(Device::gpu(0));
    CHECK(memory::stats(Device::gpu(0)).reserved_bytes == 0);
    CHECK(gpu.source->used_bytes() == 0);
    memory::set_limit(Device::gpu(0), 3 * kDeviceMiB);
    CHECK(gpu.alloc.limit() == 3 * kDeviceMiB);
    CHECK(memory::limit(Device::gpu(0)) == 3 * kDeviceMiB);
  }
  // Unregistered again: the same typed error as before any registration
  // (no engine is linked into this binary, so gpu(0) is not available).
  CHECK_THROWS_WITH_AS(memory::stats(Device::gpu(0)), doctest::Contains("gpu(0) is not available"), InvalidArgument);
  CHECK_THROWS_WITH_AS(memory::empty_cache(Device::gpu(0)), doctest::Contains("gpu(0) is not available"),
                       InvalidArgument);
  CHECK_THROWS_AS(memory::empty_cache(Device::gpu(99)), InvalidArgument);
}

TEST_CASE("NDGC_GPU_MAX_BYTES limits a GPU allocator when it registers") {
  // The options are read once per process: the check runs in a child process
  // of this binary with the variable set.
  if (const char* v = std::getenv("NDGC_GPU_MAX_BYTES"); v && std::string(v) == "3m") {
    FakeGpu gpu(64 * kDeviceMiB);
    FakeGpu limited(64 * kDeviceMiB);
    limited.alloc.set_limit(5 * kDeviceMiB);
    CHECK(gpu.alloc.limit() == 0);
    {
      Registered reg(gpu.alloc);
      CHECK(memory::limit(Device::gpu(0)) == 3 * kDeviceMiB);
      CHECK_THROWS_WITH_AS(gpu.alloc.allocate(4 * kDeviceMiB), doctest::Contains("limit of 3.0 MiB"), OutOfMemory);
    }
    {
      Registered reg(limited.alloc);  // a limit set in code is kept
      CHECK(memory::limit(Device::gpu(0)) == 5 * kDeviceMiB);
    }
    return;
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  self[n] = '\0';
  const std::string run = std::string("NDGC_GPU_MAX_BYTES=3m '") + self +
                          "' -tc='NDGC_GPU_MAX_BYTES limits a GPU allocator when it registers' > /dev/null 2>&1";
  CHECK(std::system(run.c_str()) == 0);
}

TEST_CASE("the OOM ladder on a registered GPU: auto-close drains orphans, cached segments go back, no OutOfMemory") {
  test::FakeGpuProbe probe(1);  // managers on gpu(0) need a usable device
  FakeGpu gpu(22 * kDeviceMiB);
  Registered reg(gpu.alloc);
  memory::set_limit(Device::gpu(0), 0);  // whatever NDGC_GPU_MAX_BYTES says: the device's size is the bound here
  {
    test::AutoClose on(true);
    NDManager m = NDManager::new_base_manager("gpu-steps", Device::gpu(0));
    // 40 steps of 768 kDeviceKiB each, orphaned at once: 11 small segments hold 22 of them.
    for (int step = 0; step < 40; ++step) {
      NDArray x = gpu_array(m, 768 * kDeviceKiB);
    }
    // A large-pool request needs a 20 kDeviceMiB segment: the small pool's must go back first.
    NDArray big = gpu_array(m, 4 * kDeviceMiB);
    memory::Stats s = memory::stats(Device::gpu(0));
    CHECK(s.oom_count == 0);
    CHECK(s.alloc_retries >= 2);  // the ladder ran: once in the loop, once for `big`
    gc::poll();
    s = memory::stats(Device::gpu(0));
    CHECK(s.current_bytes == 4 * kDeviceMiB);
    CHECK(m.array_count() == 1);
  }
  CHECK(memory::stats(Device::gpu(0)).current_bytes == 0);

  // The same steps without auto-close: the orphans stay in their manager.
  NDManager m = NDManager::new_base_manager("gpu-leaky", Device::gpu(0));
  std::string what;
  try {
    for (int step = 0; step < 40; ++step) {
      NDArray x = gpu_array(m, 768 * kDeviceKiB);
    }
  } catch (const OutOfMemory& e) {
    what = e.what();
  }
  CHECK(contains(what, "system/gpu-leaky"));  // the largest manager
  CHECK(contains(what, "22.0 MiB in all"));
  CHECK(m.array_count() == 22);
  CHECK(memory::stats(Device::gpu(0)).oom_count == 1);
  m.close();
  CHECK(memory::stats(Device::gpu(0)).current_bytes == 0);
}

TEST_CASE("memory::empty_cache on the CPU gives this thread's cached host blocks back") {
  memory::DeviceAllocator& host = memory::host_allocator();
  for (int i = 0; i < 4; ++i) {
    void* p = host.allocate(16 * kDeviceKiB);
    host.deallocate(p, 16 * kDeviceKiB);
  }
  memory::empty_cache(Device::cpu());
  // This thread's cache is empty now (other threads' caches stay): a block
  // freed next is cached (unless a sanitizer build bypasses the cache) and
  // empty_cache takes the count back to the same figure.
  const std::uint64_t after = memory::stats(Device::cpu()).cached_bytes;
  void* p = host.allocate(16 * kDeviceKiB);
  host.deallocate(p, 16 * kDeviceKiB);
  memory::empty_cache(Device::cpu());
  CHECK(memory::stats(Device::cpu()).cached_bytes == after);
}
