// BatchRange and prefetching: the same batches with and without a prefetch
// thread, early exits, worker failures, concurrent use and drop of batches,
// memory back to where it was, and the cost of an epoch.
#include <algorithm>
#include <chrono>
#include <thread>

#include "data_test_util.hpp"

using namespace ndgc;
using namespace ndgc::data_test;

namespace {

data::ArrayDataset numbered_rows(const ManagerRef& m, std::int64_t n, std::int64_t r = 3) {
  return data::ArrayDataset(m.arange(0, double(n * r)).reshape({n, r}), m.arange(0, double(n), 1, DataType::int64));
}

struct Seen {
  std::vector<std::int64_t> index, labels;
  std::vector<float> features;
  bool operator==(const Seen&) const = default;
};

Seen run_epoch(const data::ArrayDataset& ds, const ManagerRef& parent, std::int64_t epoch) {
  Seen s;
  for (data::Batch& b : ds.batches(parent, epoch)) {
    s.index.push_back(b.index);
    std::vector<std::int64_t> l = b.labels[0].to_vector<std::int64_t>();
    std::vector<float> f = b.data[0].to_vector<float>();
    s.labels.insert(s.labels.end(), l.begin(), l.end());
    s.features.insert(s.features.end(), f.begin(), f.end());
  }
  return s;
}

// A dataset whose batch `fail_at` cannot be made.
class Failing : public data::Dataset {
 public:
  Failing(data::ArrayDataset inner, std::int64_t fail_at) : inner_(std::move(inner)), fail_at_(fail_at) {}
  std::int64_t size() const override { return inner_.size(); }
  data::Batch get_batch(const ManagerRef& parent, std::span<const std::int64_t> indices) const override {
    if (indices.front() / 4 == fail_at_) throw DataError("cannot make batch " + std::to_string(fail_at_));
    return inner_.get_batch(parent, indices);
  }

 private:
  data::ArrayDataset inner_;
  std::int64_t fail_at_;
};

std::vector<std::vector<std::int64_t>> plan_of(std::int64_t batches, std::int64_t size) {
  std::vector<std::vector<std::int64_t>> plan(static_cast<std::size_t>(batches));
  for (std::int64_t b = 0; b < batches; ++b)
    for (std::int64_t i = 0; i < size; ++i) plan[std::size_t(b)].push_back(b * size + i);
  return plan;
}

}  // namespace

TEST_CASE("BatchRange: prefetching gives exactly the batches of the consumer's thread") {
  NDManager m = NDManager::new_base_manager("ds");
  data::ArrayDataset ds = numbered_rows(m, 203);
  ds.set_batch_size(16).set_shuffle(true, 5);
  for (std::int64_t epoch : {0, 1}) {
    ds.set_prefetch(0);
    const Seen expected = run_epoch(ds, m, epoch);
    CHECK(expected.index.size() == 13);
    for (int depth : {1, 2, 8, 100}) {
      CAPTURE(depth);
      ds.set_prefetch(depth);
      CHECK(run_epoch(ds, m, epoch) == expected);
    }
  }
  CHECK(m.sub_managers().empty());
}

TEST_CASE("BatchRange: batch managers are named, children of the parent, and close as the loop advances") {
  NDManager m = NDManager::new_base_manager("ds");
  NDManager trainer = m.new_sub_manager("trainer");
  data::ArrayDataset ds = numbered_rows(m, 20, 100);
  ds.set_batch_size(5);
  const std::uint64_t bytes = host_bytes();
  for (int depth : {0, 2}) {
    ds.set_prefetch(depth);
    NDArray previous;
    for (data::Batch& b : ds.batches(trainer, 0)) {
      CHECK(b.manager.name() == "batch " + std::to_string(b.index));
      CHECK(b.manager.parent().same(trainer));
      if (previous.defined()) CHECK(previous.is_closed());  // the last batch closed when the iterator moved on
      previous = b.data[0];
      CHECK(trainer.sub_managers().size() <= std::size_t(depth) + 2);
    }
    CHECK(previous.is_closed());
    CHECK(trainer.sub_managers().empty());
    CHECK(host_bytes() == bytes);
  }
}

TEST_CASE("BatchRange: a batch moved out of the loop outlives the iterator's step") {
  NDManager m = NDManager::new_base_manager("ds");
  data::ArrayDataset ds = numbered_rows(m, 12);
  ds.set_batch_size(4).set_prefetch(1);
  std::vector<data::Batch> kept;
  for (data::Batch& b : ds.batches(m, 0)) kept.push_back(std::move(b));
  REQUIRE(kept.size() == 3);
  CHECK(kept[2].labels[0].to_vector<std::int64_t>() == std::vector<std::int64_t>{8, 9, 10, 11});
  CHECK(m.sub_managers().size() == 3);
  const std::uint64_t bytes = host_bytes();
  kept.clear();
  CHECK(host_bytes() < bytes);
  CHECK(m.sub_managers().empty());
}

TEST_CASE("BatchRange: leaving the loop early stops and joins the prefetch thread, closing what it made") {
  NDManager m = NDManager::new_base_manager("ds");
  data::ArrayDataset ds = numbered_rows(m, 1000, 64);
  ds.set_batch_size(10);
  const std::uint64_t bytes = host_bytes();
  for (int depth : {1, 4, 50}) {
    CAPTURE(depth);
    ds.set_prefetch(depth);
    int taken = 0;
    for (data::Batch& b : ds.batches(m, 0)) {
      CHECK(b.index == taken);
      if (++taken == 3) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the worker fill its queue
        break;
      }
    }
    CHECK(taken == 3);
    CHECK(m.sub_managers().empty());
    CHECK(host_bytes() == bytes);
  }
  // Never iterated: nothing made. Iterated by begin() only: one batch, closed with the range.
  {
    data::BatchRange idle = ds.batches(m, 0);
    CHECK(idle.size() == 100);
    CHECK(m.sub_managers().empty());
    auto it = idle.begin();
    CHECK(it->index == 0);
  }
  CHECK(m.sub_managers().empty());
  CHECK(host_bytes() == bytes);
}

TEST_CASE("BatchRange: a failure to make a batch reaches the consumer at that batch") {
  NDManager m = NDManager::new_base_manager("ds");
  auto failing = std::make_shared<Failing>(numbered_rows(m, 40), 3);
  const std::uint64_t bytes = host_bytes();
  for (int depth : {0, 1, 5}) {
    CAPTURE(depth);
    data::BatchRange range(failing, m, plan_of(10, 4), depth);
    std::vector<std::int64_t> got;
    auto consume = [&] {
      for (data::Batch& b : range) got.push_back(b.index);
    };
    CHECK_THROWS_WITH_AS(consume(), "cannot make batch 3", DataError);
    CHECK(got == std::vector<std::int64_t>{0, 1, 2});
    CHECK(range.begin() == std::default_sentinel);  // exhausted after the failure
    CHECK_THROWS_AS(*range.begin(), InvalidArgument);
  }
  CHECK(m.sub_managers().empty());
  CHECK(host_bytes() == bytes);
}

TEST_CASE("BatchRange: a generic Dataset, a moved range and a temporary dataset") {
  NDManager m = NDManager::new_base_manager("ds");
  auto generic = std::make_shared<data::ArrayDataset>(numbered_rows(m, 8));
  data::BatchRange first(generic, m, plan_of(2, 4), 1);
  data::BatchRange moved(std::move(first));
  CHECK(first.size() == 0);
  CHECK(first.begin() == std::default_sentinel);
  std::int64_t count = 0;
  for (data::Batch& b : moved) count += b.size;
  CHECK(count == 8);

  // The range copies the dataset's handles: the temporary ArrayDataset dies
  // before the loop body runs, the range does not dangle.
  count = 0;
  for (data::Batch& b : numbered_rows(m, 9).set_batch_size(2).set_prefetch(2).batches(m, 0)) count += b.size;
  CHECK(count == 9);
  CHECK_THROWS_AS(data::BatchRange(generic, ManagerRef(), plan_of(1, 1), 0), InvalidArgument);
  CHECK_THROWS_AS(data::BatchRange(nullptr, m, plan_of(1, 1), 0), InvalidArgument);
}

TEST_CASE("BatchRange: the prefetch thread creates batches while the consumer computes and drops them") {
  NDManager m = NDManager::new_base_manager("ds");
  data::ArrayDataset ds = numbered_rows(m, 3000, 32);
  ds.set_batch_size(25).set_shuffle(true, 11).set_prefetch(3);
  NDManager trainer = m.new_sub_manager("trainer");
  const std::uint64_t bytes = host_bytes();
  for (bool autoclose : {false, true}) {
    CAPTURE(autoclose);
    AutoCloseSwitch sw(autoclose);
    NDArray w = trainer.ones({32, 4});
    for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
      std::int64_t total = 0;
      double checksum = 0;
      for (data::Batch& b : ds.batches(trainer, epoch)) {
        // Work in the batch's manager: a matmul, a reduction, a temporary dropped at once.
        NDArray y = b.data[0].matmul(w).relu().sum();
        checksum += y.item<float>();
        (void)(b.data[0] * 2.0f);
        total += b.size;
      }
      CHECK(total == 3000);
      // Sum over all rows of 4 * sum(row): 4 * sum(0 .. 3000*32-1), whatever the order.
      const double n = 3000.0 * 32;
      CHECK(checksum == doctest::Approx(4 * n * (n - 1) / 2).epsilon(1e-5));
    }
    w.close();
    gc::poll();
    CHECK(trainer.sub_managers().empty());
    CHECK(host_bytes() == bytes);
  }
}

TEST_CASE("BatchRange: consumers on several threads, each with its own prefetching range") {
  NDManager m = NDManager::new_base_manager("ds");
  data::ArrayDataset ds = numbered_rows(m, 500, 16);
  ds.set_batch_size(7).set_shuffle(true, 3).set_prefetch(2);
  const std::uint64_t bytes = host_bytes();
  std::vector<std::thread> threads;
  std::vector<std::int64_t> sums(4, 0);
  for (std::size_t t = 0; t < sums.size(); ++t)
    threads.emplace_back([&, t] {
      NDManager mine = m.new_sub_manager("consumer " + std::to_string(t));
      for (data::Batch& b : ds.batches(mine, std::int64_t(t)))
        sums[t] += b.labels[0].sum().item<std::int64_t>();
    });
  for (std::thread& t : threads) t.join();
  for (std::int64_t s : sums) CHECK(s == 499 * 500 / 2);
  CHECK(m.sub_managers().empty());
  CHECK(host_bytes() == bytes);
}

TEST_CASE("BatchRange: closing the parent mid-epoch is an error at the consumer, never a crash") {
  NDManager m = NDManager::new_base_manager("ds");
  data::ArrayDataset ds = numbered_rows(m, 400);
  ds.set_batch_size(4);
  const std::uint64_t bytes = host_bytes();
  for (int depth : {0, 3}) {
    CAPTURE(depth);
    ds.set_prefetch(depth);
    NDManager trainer = m.new_sub_manager("trainer");
    auto consume = [&] {
      for (data::Batch& b : ds.batches(trainer, 0)) {
        if (b.index == 2) trainer.close();
        if (b.index > 2) (void)b.data[0].sum();  // a batch made before the close: its arrays are closed
      }
    };
    CHECK_THROWS_AS(consume(), Error);
    CHECK(host_bytes() == bytes);
  }
}

TEST_CASE("BatchRange: one epoch of batches of 32 over 60000 x 784 float32 copies each row once") {
  // Speed-independent: the epoch allocates exactly one batch buffer per
  // batch and per field (no staging copies) and gives every byte back. The
  // epoch's time is a benchmark (perf/data_debug_bench.cpp, BM_BatchEpoch).
  NDManager m = NDManager::new_base_manager("perf");
  data::ArrayDataset ds(m.zeros({60000, 784}), m.zeros({60000}, DataType::int64));
  ds.set_batch_size(32);
  for (bool shuffle : {false, true})
    for (int depth : {0, 2}) {
      CAPTURE(shuffle);
      CAPTURE(depth);
      ds.set_shuffle(shuffle, 1).set_prefetch(depth);
      const memory::Stats before = memory::stats(Device::cpu());
      std::int64_t rows = 0, batches = 0;
      for (data::Batch& b : ds.batches(m, 0)) {
        rows += b.size;
        ++batches;
      }
      const memory::Stats after = memory::stats(Device::cpu());
      CHECK(rows == 60000);
      CHECK(batches == 1875);
      CHECK(after.allocations - before.allocations == 2 * 1875);
      CHECK(after.allocated_bytes - before.allocated_bytes == 60000ull * (784 * 4 + 8));
      CHECK(after.current_bytes == before.current_bytes);
    }
}
