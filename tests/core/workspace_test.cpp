// Workspaces and arrays (src/core/workspace_arrays.cpp): an array whose bytes
// its workspace recycled is closed then, through every path that reaches it.
#include <doctest/doctest.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include "support/sanitizers.hpp"
#if NDGC_ASAN
#include <sanitizer/asan_interface.h>
#endif

#include "core/host_mirror.hpp"
#include "core/storage.hpp"
#include "memory/allocator.hpp"
#include "memory/workspace.hpp"
#include "sim_gpu.hpp"
#include "test_util.hpp"

using namespace ndgc;
namespace ws = ndgc::workspace;

namespace {

struct Cleanup {
  ~Cleanup() { ws::destroy_all_for_this_thread(); }
};

std::string closed_message(const std::function<void()>& use) {
  try {
    use();
  } catch (const ArrayClosed& e) {
    return e.what();
  }
  return "";
}

void check_names_workspace(const std::string& what, const std::string& name, int cycle) {
  CAPTURE(what);
  CHECK(what.find("workspace '" + name + "'") != std::string::npos);
  CHECK(what.find("cycle " + std::to_string(cycle)) != std::string::npos);
  CHECK(what.find("workspace::detach") != std::string::npos);
  CHECK(what.find("leverage_to") != std::string::npos);
}

}  // namespace

TEST_CASE("use after recycle: ArrayClosed naming the workspace, its cycle, detach and leverage_to") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  NDArray kept, view;
  {
    ws::Scope s = ws::activate(test::fixed_arena(1 << 16), "LOOP");
    kept = m.ones({4, 4});
    view = kept.reshape({16});  // shares kept's storage
  }
  CHECK(view.sum().item<float>() == 16.0f);
  const std::size_t open_before = m.array_count();
  ws::Scope s = ws::activate(test::fixed_arena(1 << 16), "LOOP");
  std::string what = closed_message([&] { (void)kept.sum(); });
  check_names_workspace(what, "LOOP", 2);
  CHECK(what.find("created in cycle 1") != std::string::npos);
  check_names_workspace(closed_message([&] { (void)view.sum(); }), "LOOP", 2);
  // The arrays still belonged to m; closing them unlinked them there.
  CHECK(m.array_count() == open_before - 2);
}

TEST_CASE("detach copies out with the right values; leverage_to copies into an enclosing workspace") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  NDArray out, up;
  {
    ws::Scope outer = ws::activate(test::fixed_arena(1 << 16), "OUTER");
    {
      ws::Scope inner = ws::activate(test::fixed_arena(1 << 16), "INNER");
      NDArray t = m.arange(0, 10);
      out = ws::detach(t * 2.0f);
      up = ws::leverage_to(t + 1.0f, "OUTER");
      CHECK(ws::stats("OUTER").allocations == 1);
      try {
        (void)ws::leverage_to(t, "ELSEWHERE");
        FAIL("expected WorkspaceError");
      } catch (const WorkspaceError& e) {
        CHECK(std::string(e.what()).find("'ELSEWHERE'") != std::string::npos);
      }
    }
    // INNER's cycle ended and recycled nothing yet; OUTER's copy lives on.
    CHECK(up.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  }
  { ws::Scope again = ws::activate(test::fixed_arena(1 << 16), "OUTER"); }
  CHECK_THROWS_AS((void)up.sum(), ArrayClosed);
  ws::destroy_all_for_this_thread();
  CHECK(out.to_vector<float>() == std::vector<float>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18});
  CHECK(out.manager().name() == "ws");
}

TEST_CASE("destroy with live handles closes the arrays; accounting returns to zero") {
  Cleanup cleanup;
  const std::uint64_t base = test::host_bytes();
  NDManager m = NDManager::new_base_manager("ws");
  NDArray a;
  NDList list;
  {
    ws::Scope s = ws::activate(test::fixed_arena(4096), "D");
    a = m.ones({8});
    list.push_back(m.zeros({2}));
    list.push_back(a.get("1:3"));
  }
  ws::destroy("D");
  check_names_workspace(closed_message([&] { (void)a.sum(); }), "D", 1);
  std::string what = closed_message([&] { (void)list[1].sum(); });
  CHECK(what.find("destroyed") != std::string::npos);
  CHECK_THROWS_AS((void)list[0].sum(), ArrayClosed);
  CHECK(test::host_bytes() == base);
}

TEST_CASE("an array handed to another thread is closed at its cycle's end there too") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  NDArray shared;
  {
    ws::Scope s = ws::activate(test::fixed_arena(1 << 16), "T");
    shared = m.full({32}, 3.0f);
  }
  std::string seen;
  std::thread before([&] { seen = std::to_string(shared.sum().item<float>()); });
  before.join();
  CHECK(seen == std::to_string(96.0f));
  { ws::Scope s = ws::activate(test::fixed_arena(1 << 16), "T"); }
  std::thread after([&] { seen = closed_message([&] { (void)shared.sum(); }); });
  after.join();
  check_names_workspace(seen, "T", 2);
}

TEST_CASE("a reader on another thread sees its array's values or ArrayClosed, never a later cycle's bytes") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  constexpr int kReads = 200;
  std::atomic<bool> done{false};
  std::atomic<int> bad{0}, reads{0}, closed{0};
  std::mutex mu;
  NDArray current;  // guarded by mu
  std::thread reader([&] {
    while (!done.load()) {
      NDArray a;
      {
        std::lock_guard lock(mu);
        a = current;
      }
      if (!a.defined()) continue;
      try {
        std::vector<float> v = a.to_vector<float>();
        float first = v[0];
        for (float x : v)
          if (x != first) bad.fetch_add(1);
        reads.fetch_add(1);
      } catch (const ArrayClosed&) {
        closed.fetch_add(1);
      }
    }
  });
  // Until the reader has read (or been refused) enough times, so that reads
  // overlap cycle ends.
  for (int c = 0; reads.load() + closed.load() < kReads && c < 1000000; ++c) {
    ws::Scope s = ws::activate(test::fixed_arena(1 << 16), "HOT");
    NDArray a = m.full({1024}, double(c));
    std::lock_guard lock(mu);
    current = a;
  }
  done.store(true);
  reader.join();
  CHECK(bad.load() == 0);
  CHECK(reads.load() + closed.load() >= kReads);
  std::lock_guard lock(mu);
  current = NDArray();
}

TEST_CASE("closing the manager closes its workspace arrays early; their bytes return at the cycle's end") {
  Cleanup cleanup;
  NDManager outer = NDManager::new_base_manager("keep");
  ws::Scope s = ws::activate(test::fixed_arena(4096), "M");
  NDArray a;
  {
    NDManager m = NDManager::new_base_manager("step");
    a = m.ones({16});
    CHECK(s.stats().used == 64);
  }
  std::string what = closed_message([&] { (void)a.sum(); });
  CHECK(what.find("manager") != std::string::npos);
  CHECK(s.stats().used == 64);  // a bump allocator frees at the cycle's end
  NDArray b = outer.ones({16});
  CHECK(s.stats().used == 128);
}

TEST_CASE("auto-close closes orphaned workspace arrays early, as anywhere else") {
  Cleanup cleanup;
  test::AutoClose on(true);
  NDManager m = NDManager::new_base_manager("ws");
  ws::Scope s = ws::activate(test::fixed_arena(4096), "AC");
  const std::uint64_t open_before = m.array_count();
  { NDArray orphan = m.ones({16}) + 1.0f; }
  gc::poll();
  CHECK(m.array_count() == open_before);
}

TEST_CASE("op outputs and factories alike take workspace storage; the steady state allocates nothing") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws");
  NDArray w = m.ones({32, 32});
  ws::Config cfg;  // learns from the first cycle
  auto step = [&] {
    ws::Scope s = ws::activate(cfg, "STEP");
    NDArray x = m.full({8, 32}, 0.5);
    NDArray y = x.matmul(w).relu().sum();
    return ws::detach(y).item<float>();
  };
  float first = step();
  (void)step();
  const std::uint64_t before = memory::stats(Device::cpu()).allocations;
  float steady = step();
  // detach's copy is the only ordinary allocation.
  CHECK(memory::stats(Device::cpu()).allocations - before == 1);
  CHECK(steady == first);
  CHECK(steady == 8 * 32 * 16.0f);
}

TEST_CASE("fault injection over every allocation of a workspace step: an error, never a leak") {
  Cleanup cleanup;
  const std::uint64_t base = test::host_bytes();
  for (std::uint64_t n = 1; n <= 12; ++n) {
    CAPTURE(n);
    {
      NDManager m = NDManager::new_base_manager("fi");
      NDArray w = m.ones({16, 16});
      ws::Config cfg;  // the first cycle spills: each array is one allocation
      bool failed = false;
      memory::fail_allocation_after(n);
      try {
        for (int c = 0; c < 3; ++c) {
          ws::Scope s = ws::activate(cfg, "FI");
          NDArray y = (m.ones({4, 16}).matmul(w) + 1.0f).sum();
          NDArray kept = ws::detach(y);
          CHECK(kept.item<float>() == 4 * 16 * 17.0f);
        }
      } catch (const OutOfMemory&) {
        failed = true;
      }
      memory::fail_allocation_after(0);
      if (n <= 4) CHECK(failed);
      ws::destroy("FI");
    }
    CHECK(test::host_bytes() == base);
  }
}

TEST_CASE("a thread that ends with its workspaces still there: they are destroyed, their arrays closed") {
  NDManager m = NDManager::new_base_manager("ws");
  const std::uint64_t base = test::host_bytes();
  NDArray left;
  std::thread t([&] {
    { ws::Scope s = ws::activate(test::fixed_arena(4096), "EXITING"); left = m.ones({8}); }
  });
  t.join();
  std::string what = closed_message([&] { (void)left.sum(); });
  CHECK(what.find("workspace 'EXITING'") != std::string::npos);
  CHECK(what.find("destroyed") != std::string::npos);
  CHECK(test::host_bytes() == base);
}

TEST_CASE("a workspace Storage lives in its lease record, which outlives it and is reused") {
  // Note [Storage in its lease] (src/core/storage.cpp).
  Cleanup cleanup;
  void* first = nullptr;
  for (int cycle = 1; cycle <= 2; ++cycle) {
    ws::Scope s = ws::activate(test::fixed_arena(1 << 16), "RECORDS");
    detail::Storage* st = detail::Storage::allocate(Device::cpu(), 256);
    memory::Lease* lease = st->lease();
    REQUIRE(lease != nullptr);
    CHECK(static_cast<void*>(st) == static_cast<void*>(lease->payload));
    CHECK(st->data() == lease->data);
    CHECK(st->bytes() == 256);
    CHECK(lease->cycle == std::uint64_t(cycle));
    if (cycle == 1) first = st;
    else CHECK(static_cast<void*>(st) == first);  // the pooled record, and the Storage in it, came back
    CHECK(st->release() == 256);
    // The record is still the workspace's (its unit), the Storage in it is gone.
    CHECK(lease->refs.load() == 1);
#if NDGC_ASAN
    CHECK(__asan_address_is_poisoned(lease->payload) == 1);  // a use after release is reported
#endif
  }
  // Outside every workspace a Storage is an object of its own.
  detail::Storage* plain = detail::Storage::allocate(Device::cpu(), 256);
  CHECK(plain->lease() == nullptr);
  CHECK(plain->release() == 256);
}

TEST_CASE("a workspace Storage on a GPU with a host mirror: its release frees the mirror, then ends the lease") {
  // Storage::release's general case (release_last) for a Storage in a lease.
  test::SimGpu gpu;
  Cleanup cleanup;
  ws::Config cfg = test::fixed_arena(1 << 16);
  cfg.device = Device::gpu(0);
  const std::uint64_t mirrors = memory::stats(Device::gpu(0)).host_mirror_bytes;
  ws::Scope s = ws::activate(cfg, "MIRRORED");
  detail::Storage* st = detail::Storage::allocate(Device::gpu(0), 256);
  memory::Lease* lease = st->lease();
  REQUIRE(lease != nullptr);
  (void)st->host_mirror().buffer();
  CHECK(memory::stats(Device::gpu(0)).host_mirror_bytes == mirrors + 256);
  CHECK(st->release() == 256);
  CHECK(memory::stats(Device::gpu(0)).host_mirror_bytes == mirrors);
  CHECK(lease->refs.load() == 1);  // the storage's unit is gone; the workspace's remains
  CHECK(s.stats().used == 256);     // its bytes come back when the workspace recycles the lease
}

TEST_CASE("16-bit arrays live in workspaces as any other: op outputs take its storage, detach keeps the values") {
  Cleanup cleanup;
  NDManager m = NDManager::new_base_manager("ws-half");
  NDArray kept;
  {
    ws::Scope scope = ws::activate(test::fixed_arena(1 << 16), "HALF");
    NDArray t = m.arange(0, 8, 1, DataType::bfloat16);
    NDArray u = t.mul(2.0).add(t);
    CHECK(u.dtype() == DataType::bfloat16);
    CHECK(ws::stats("HALF").allocations >= 2);
    kept = ws::detach(u);
  }
  { ws::Scope again = ws::activate(test::fixed_arena(1 << 16), "HALF"); }
  CHECK(kept.to_vector<float>() == std::vector<float>{0, 3, 6, 9, 12, 15, 18, 21});
  CHECK(kept.dtype() == DataType::bfloat16);
}
