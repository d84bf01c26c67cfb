// Tests src/ops/host_read.cpp, Note [Host mirror]: a GPU array read on the
// host keeps a copy of its storage that later reads reuse until the GPU is
// written again; reads through views of the storage use the same copy; large
// storages and one-element-per-write reads are never mirrored; the copy's
// bytes are reported and freed with the storage; threads read it safely.
// On the simulated GPU (tests/sim_gpu.hpp), which counts device→host copies.
#include <atomic>
#include <thread>
#include <vector>

#include "ops/gpu_writes.hpp"
#include "ops/host_read.hpp"
#include "ops_test_util.hpp"
#include "sim_gpu.hpp"

using namespace ndgc;

namespace {

std::vector<float> iota(int n, float from = 0) {
  std::vector<float> v(std::size_t(n), 0);
  for (int i = 0; i < n; ++i) v[std::size_t(i)] = from + float(i);
  return v;
}

std::uint64_t mirror_bytes() { return memory::stats(Device::gpu(0)).host_mirror_bytes; }

}  // namespace

TEST_CASE("host mirror: a second read of an unwritten GPU array copies nothing from the device") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("g", Device::gpu(0));
  NDArray x = m.create(iota(6), Shape{2, 3});
  gpu.reset_counts();
  CHECK(x.to_vector<float>() == iota(6));
  CHECK(gpu.to_host_calls() == 1);
  CHECK(mirror_bytes() == 24);
  CHECK(x.to_vector<float>() == iota(6));
  CHECK(x.to_string().find("[[0, 1, 2],\n [3, 4, 5]]") != std::string::npos);
  CHECK(x.to_vector<double>() == std::vector<double>{0, 1, 2, 3, 4, 5});  // converted from the copy
  CHECK(gpu.to_host_calls() == 1);
}

TEST_CASE("host mirror: views of a mirrored storage read their own elements from the copy") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("g", Device::gpu(0));
  NDArray x = m.create(iota(12), Shape{3, 4});
  (void)x.to_vector<float>();
  gpu.reset_counts();
  CHECK(x.transpose().to_vector<float>() == std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  CHECK(x.get("1:, 2").to_vector<float>() == std::vector<float>{6, 10});
  CHECK(x.get("2, 3").item<float>() == 11);
  CHECK(x.reshape({12}).get("::5").to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 5, 10});
  CHECK(gpu.to_host_calls() == 0);
}

TEST_CASE("host mirror: item() over every element copies the storage once, on the second read") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("g", Device::gpu(0));
  const int n = 1000;
  NDArray x = m.create(iota(n, 1), Shape{n});
  gpu.reset_counts();
  const std::uint64_t epoch = ops::gpu_write_epoch();
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += x.get(NDIndex().add_index(i)).item<float>();
  CHECK(sum == doctest::Approx(n * (n + 1) / 2.0));
  REQUIRE(ops::gpu_write_epoch() == epoch);  // indexing made views, wrote nothing
  // The first read copies its element only; the second finds the storage
  // read again with no write between, and copies all of it.
  CHECK(gpu.to_host_calls() == 2);
  CHECK(mirror_bytes() == n * 4);
}

TEST_CASE("host mirror: a write on the GPU makes the next read copy again and see it") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("g", Device::gpu(0));
  NDArray x = m.create(iota(4), Shape{4});
  NDArray y = m.create(iota(4), Shape{4});
  (void)x.to_vector<float>();
  gpu.reset_counts();

  SUBCASE("in place") { x.add_(10); }
  SUBCASE("through a view of the same storage") { x.get("1:3").fill_(-1); }
  SUBCASE("assign from the host") { x.assign_(m.create(iota(4, 10), Shape{4})); }
  SUBCASE("a write to another GPU array") {
    // The epoch counts every GPU write, so x's copy goes stale too; the
    // read copies again and still finds x's values.
    y.mul_(3);
  }
  // A transfer, not through the mirror.
  const std::vector<float> expected = x.to_device(Device::cpu()).to_vector<float>();
  const std::uint64_t before = gpu.to_host_calls();
  CHECK(x.to_vector<float>() == expected);
  CHECK(gpu.to_host_calls() == before + 1);
  CHECK(x.to_vector<float>() == expected);
  CHECK(gpu.to_host_calls() == before + 1);
}

TEST_CASE("host mirror: one element read after each write never copies the whole storage") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("g", Device::gpu(0));
  NDArray w = m.zeros({256, 64});
  gpu.reset_counts();
  for (int step = 1; step <= 5; ++step) {
    w.add_(1);
    CHECK(w.get("3, 7").item<float>() == float(step));
  }
  CHECK(gpu.to_host_calls() == 5);
  CHECK(mirror_bytes() == 0);
}

TEST_CASE("host mirror: storages over the size cap are always read from the device") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("g", Device::gpu(0));
  const std::int64_t n = std::int64_t(ops::kHostMirrorMaxBytes / 4) + 1;
  NDArray x = m.ones({n});
  gpu.reset_counts();
  CHECK(x.to_vector<float>().size() == std::size_t(n));
  CHECK(x.to_vector<float>().size() == std::size_t(n));
  CHECK(gpu.to_host_calls() == 2);
  CHECK(mirror_bytes() == 0);
}

TEST_CASE("host mirror: its bytes are reported per device and freed with the storage") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("g", Device::gpu(0));
  CHECK(mirror_bytes() == 0);
  NDArray x = m.ones({100});
  NDArray view = x.get("10:20");
  (void)x.to_vector<float>();
  CHECK(mirror_bytes() == 400);
  x.close();
  CHECK(mirror_bytes() == 400);  // the view keeps the storage, and its copy
  CHECK(view.to_vector<float>() == std::vector<float>(10, 1.0f));
  view.close();
  CHECK(mirror_bytes() == 0);
  CHECK(memory::stats(Device::cpu()).host_mirror_bytes == 0);  // a field of GPU devices
  NDManager host = NDManager::new_base_manager("h");
  (void)host.ones({100}).to_vector<float>();
  CHECK(mirror_bytes() == 0);  // host arrays are read in place
}

TEST_CASE("host mirror: threads reading one GPU array while others write the GPU read current values") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("g", Device::gpu(0));
  const int n = 64;
  NDArray shared = m.create(iota(n), Shape{n});
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const int k = (i * 7 + t) % n;
        if (shared.get(NDIndex().add_index(k)).item<float>() != float(k)) wrong.fetch_add(1);
        if (i % 50 == 0 && shared.to_vector<float>() != iota(n)) wrong.fetch_add(1);
      }
    });
  threads.emplace_back([&] {  // writes elsewhere on the GPU: every copy goes stale
    NDManager own = NDManager::new_base_manager("writer", Device::gpu(0));
    NDArray other = own.zeros({n});
    for (int i = 1; i <= 200; ++i) {
      other.add_(1);
      if (other.get("0").item<float>() != float(i)) wrong.fetch_add(1);
    }
  });
  for (std::thread& t : threads) t.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("host mirror: a storage written and read by turns on two threads never reads a stale copy") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("g", Device::gpu(0));
  NDArray x = m.zeros({16});
  std::atomic<int> turn{0}, wrong{0};
  constexpr int kRounds = 200;
  std::thread writer([&] {
    for (int r = 1; r <= kRounds; ++r) {
      while (turn.load(std::memory_order_acquire) != 2 * r - 2) std::this_thread::yield();
      x.add_(1);
      turn.store(2 * r - 1, std::memory_order_release);
    }
  });
  for (int r = 1; r <= kRounds; ++r) {
    while (turn.load(std::memory_order_acquire) != 2 * r - 1) std::this_thread::yield();
    if (x.to_vector<float>() != std::vector<float>(16, float(r))) wrong.fetch_add(1);
    if (x.get("5").item<float>() != float(r)) wrong.fetch_add(1);
    turn.store(2 * r, std::memory_order_release);
  }
  writer.join();
  CHECK(wrong.load() == 0);
}
