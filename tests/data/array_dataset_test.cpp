// ArrayDataset: construction checks, get_batch gathers the right rows into a
// batch-owned manager, batch counts under drop_last and limit, settings.
#include <algorithm>

#include "data_test_util.hpp"
#include "sim_gpu.hpp"

using namespace ndgc;
using namespace ndgc::data_test;

namespace {

// features[i] = {i*r, i*r + 1, ...}, labels[i] = i.
data::ArrayDataset numbered(const ManagerRef& m, std::int64_t n, std::int64_t r = 3) {
  return data::ArrayDataset(m.arange(0, double(n * r)).reshape({n, r}), m.arange(0, double(n), 1, DataType::int64));
}

std::vector<std::int64_t> labels_of(const data::Batch& b) { return b.labels[0].to_vector<std::int64_t>(); }

}  // namespace

TEST_CASE("ArrayDataset: features and labels need the same number of rows") {
  NDManager m = NDManager::new_base_manager("ds");
  CHECK_THROWS_AS(data::ArrayDataset(m.zeros({4, 2}), m.zeros({5})), InvalidArgument);
  CHECK_THROWS_AS(data::ArrayDataset(m.zeros({}), m.zeros({})), InvalidArgument);
  CHECK_THROWS_AS(data::ArrayDataset(NDArray(), m.zeros({4})), InvalidArgument);
  data::ArrayDataset ds(m.zeros({4, 2, 2}), m.zeros({4, 3}));
  CHECK(ds.size() == 4);
  CHECK(ds.batch_size() == 32);
  CHECK_THROWS_AS(ds.set_batch_size(0), InvalidArgument);
  CHECK_THROWS_AS(ds.set_prefetch(-1), InvalidArgument);
  CHECK_THROWS_AS(ds.set_limit_batches(-1), InvalidArgument);
  ds.set_batch_size(3).set_shuffle(true, 9).set_drop_last(true).set_prefetch(2).set_limit_batches(5);
  CHECK(ds.batch_size() == 3);
  CHECK(ds.shuffle());
  CHECK(ds.seed() == 9);
  CHECK(ds.drop_last());
  CHECK(ds.prefetch() == 2);
  CHECK(ds.limit_batches() == 5);
}

TEST_CASE("ArrayDataset::get_batch: the rows asked for, in a new sub-manager of the parent") {
  NDManager m = NDManager::new_base_manager("ds");
  NDManager trainer = m.new_sub_manager("trainer");
  data::ArrayDataset ds = numbered(m, 10);
  const std::int64_t picks[] = {7, 1, 2, 3, 9};
  data::Batch b = ds.get_batch(trainer, picks);
  CHECK(b.size == 5);
  CHECK(b.manager.parent().same(trainer));
  REQUIRE(b.data.size() == 1);
  REQUIRE(b.labels.size() == 1);
  CHECK(b.data[0].manager().same(b.manager));
  CHECK(b.labels[0].manager().same(b.manager));
  CHECK(b.data[0].shape() == Shape{5, 3});
  CHECK(b.data[0].is_contiguous());
  CHECK(b.data[0].to_vector<float>() == std::vector<float>{21, 22, 23, 3, 4, 5, 6, 7, 8, 9, 10, 11, 27, 28, 29});
  CHECK(labels_of(b) == std::vector<std::int64_t>{7, 1, 2, 3, 9});
  CHECK(b.manager.array_count() == 2);
  CHECK(trainer.array_count() == 0);
}

TEST_CASE("ArrayDataset::get_batch: labels of any rank and dtype, empty batches, strided sources") {
  NDManager m = NDManager::new_base_manager("ds");
  // Labels [N, 2] uint8; features a transposed (non-contiguous) view, gathered through the engine.
  NDArray labels = m.arange(0, 12, 1, DataType::uint8).reshape({6, 2});
  NDArray features = m.arange(0, 24, 1, DataType::float64).reshape({4, 6}).transpose();  // [6, 4]
  REQUIRE_FALSE(features.is_contiguous());
  data::ArrayDataset ds(features, labels);
  const std::int64_t picks[] = {5, 0, 1};
  data::Batch b = ds.get_batch(m, picks);
  CHECK(b.data[0].shape() == Shape{3, 4});
  CHECK(b.data[0].dtype() == DataType::float64);
  CHECK(b.data[0].to_vector<double>() == std::vector<double>{5, 11, 17, 23, 0, 6, 12, 18, 1, 7, 13, 19});
  CHECK(b.labels[0].to_vector<std::uint8_t>() == std::vector<std::uint8_t>{10, 11, 0, 1, 2, 3});
  data::Batch none = ds.get_batch(m, std::span<const std::int64_t>());
  CHECK(none.size == 0);
  CHECK(none.data[0].shape() == Shape{0, 4});
}

TEST_CASE("ArrayDataset::get_batch: bad input throws and leaves nothing behind") {
  NDManager m = NDManager::new_base_manager("ds");
  NDManager trainer = m.new_sub_manager("trainer");
  data::ArrayDataset ds = numbered(m, 10);
  const std::uint64_t bytes = host_bytes();
  const std::int64_t bad[] = {1, 10};
  CHECK_THROWS_WITH_AS(ds.get_batch(trainer, bad), doctest::Contains("sample index 10 (position 1"), InvalidArgument);
  const std::int64_t negative[] = {-1};
  CHECK_THROWS_AS(ds.get_batch(trainer, negative), InvalidArgument);
  CHECK(trainer.sub_managers().empty());
  CHECK(host_bytes() == bytes);
  NDManager closed = m.new_sub_manager("closed");
  closed.close();
  const std::int64_t ok[] = {1};
  CHECK_THROWS_AS(ds.get_batch(closed, ok), ManagerClosed);
  // The dataset's own arrays closed under it: ArrayClosed, not a crash.
  NDManager other = NDManager::new_base_manager("other");
  data::ArrayDataset gone = numbered(other, 4);
  other.close();
  CHECK_THROWS_AS(gone.get_batch(trainer, ok), ArrayClosed);
  CHECK(host_bytes() == bytes);
}

TEST_CASE("ArrayDataset: a batch's manager closes with it and frees its arrays") {
  NDManager m = NDManager::new_base_manager("ds");
  data::ArrayDataset ds = numbered(m, 100, 50);
  const std::uint64_t bytes = host_bytes();
  NDArray x;
  {
    const std::int64_t picks[] = {3, 4, 5};
    data::Batch b = ds.get_batch(m, picks);
    x = b.data[0];
    CHECK(host_bytes() > bytes);
  }
  CHECK(host_bytes() == bytes);
  CHECK(x.is_closed());
  CHECK_THROWS_AS(x.sum(), ArrayClosed);
  CHECK(m.sub_managers().empty());
}

TEST_CASE("ArrayDataset: batch counts, partial last batch, drop_last and limit") {
  NDManager m = NDManager::new_base_manager("ds");
  data::ArrayDataset ds = numbered(m, 10);
  ds.set_batch_size(3);
  CHECK(ds.batch_count() == 4);
  std::vector<std::int64_t> sizes, indices;
  for (data::Batch& b : ds.batches(m, 0)) {
    sizes.push_back(b.size);
    indices.push_back(b.index);
    CHECK(b.data[0].shape()[0] == b.size);
  }
  CHECK(sizes == std::vector<std::int64_t>{3, 3, 3, 1});
  CHECK(indices == std::vector<std::int64_t>{0, 1, 2, 3});

  ds.set_drop_last(true);
  CHECK(ds.batch_count() == 3);
  CHECK(ds.batches(m, 0).size() == 3);
  ds.set_limit_batches(2);
  CHECK(ds.batch_count() == 2);
  std::int64_t seen = 0;
  for (data::Batch& b : ds.batches(m, 0)) seen += b.size;
  CHECK(seen == 6);
  ds.set_limit_batches(0).set_drop_last(false).set_batch_size(64);
  CHECK(ds.batch_count() == 1);
  ds.set_drop_last(true);
  CHECK(ds.batch_count() == 0);
  for (data::Batch& b : ds.batches(m, 0)) FAIL("no batch expected, got " << b.index);
}

TEST_CASE("ArrayDataset: unshuffled batches follow the rows; shuffled ones are reproducible") {
  NDManager m = NDManager::new_base_manager("ds");
  data::ArrayDataset ds = numbered(m, 50);
  ds.set_batch_size(8);
  std::vector<std::int64_t> order;
  for (data::Batch& b : ds.batches(m, 3))
    for (std::int64_t l : labels_of(b)) order.push_back(l);
  std::vector<std::int64_t> identity(50);
  for (std::int64_t i = 0; i < 50; ++i) identity[std::size_t(i)] = i;
  CHECK(order == identity);

  auto epoch = [&](const data::ArrayDataset& d, std::int64_t e) {
    std::vector<std::int64_t> labels;
    for (data::Batch& b : d.batches(m, e)) {
      std::vector<float> f = b.data[0].to_vector<float>();
      std::vector<std::int64_t> l = labels_of(b);
      for (std::size_t i = 0; i < l.size(); ++i) CHECK(f[i * 3] == float(l[i] * 3));  // rows and labels agree
      labels.insert(labels.end(), l.begin(), l.end());
    }
    return labels;
  };
  ds.set_shuffle(true, 42);
  std::vector<std::int64_t> e0 = epoch(ds, 0), e0_again = epoch(ds, 0), e1 = epoch(ds, 1);
  CHECK(e0 == e0_again);
  CHECK(e0 != e1);
  CHECK(e0 != identity);
  for (const auto& e : {e0, e1}) {  // every sample exactly once per epoch
    std::vector<std::int64_t> sorted = e;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == identity);
  }
  // The plan is the one the batches follow.
  std::vector<std::int64_t> planned;
  for (const auto& batch : ds.epoch_plan(0)) planned.insert(planned.end(), batch.begin(), batch.end());
  CHECK(planned == e0);
  data::ArrayDataset other = numbered(m, 50);
  other.set_batch_size(5).set_shuffle(true, 42);  // the order depends on (seed, epoch), not on the batch size
  CHECK(epoch(other, 0) == e0);
  other.set_shuffle(true, 43);
  CHECK(epoch(other, 0) != e0);
}

TEST_CASE("set_shard: every rank's batches are slices of the same global batches, disjoint and covering") {
  NDManager m = NDManager::new_base_manager("ds");
  data::ArrayDataset whole = numbered(m, 23);
  whole.set_batch_size(6).set_shuffle(true, 9);  // 3 ranks x 2 rows
  for (int rank = 0; rank < 3; ++rank) CHECK_THROWS_AS(data::ArrayDataset(whole).set_shard(rank, 0), InvalidArgument);
  CHECK_THROWS_WITH_AS(data::ArrayDataset(whole).set_shard(3, 3), doctest::Contains("rank 3 of 3"), InvalidArgument);
  std::vector<data::ArrayDataset> ranks(3, whole);
  for (int r = 0; r < 3; ++r) {
    ranks[std::size_t(r)].set_batch_size(2).set_shard(r, 3);
    CHECK(ranks[std::size_t(r)].shard_rank() == r);
    CHECK(ranks[std::size_t(r)].shard_count() == 3);
  }
  // 23 rows in global batches of 6: 3 full ones and one of 5, which every rank shares.
  CHECK(ranks[0].batch_count() == 4);
  for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
    const auto global = whole.epoch_plan(epoch);
    for (std::size_t b = 0; b < global.size(); ++b) {
      std::vector<std::int64_t> joined;
      for (auto& ds : ranks) {
        const auto part = ds.epoch_plan(epoch)[b];
        CHECK_FALSE(part.empty());
        joined.insert(joined.end(), part.begin(), part.end());
      }
      CHECK(joined == global[b]);
    }
  }
  // A last global batch with fewer rows than ranks is dropped: 19 = 3 x 6 + 1.
  data::ArrayDataset short_tail = numbered(m, 19);
  short_tail.set_batch_size(2).set_shard(2, 3);
  CHECK(short_tail.batch_count() == 3);
  std::int64_t seen = 0;
  for (data::Batch& b : short_tail.batches(m, 0)) seen += b.size;
  CHECK(seen == 6);
}

// Note [Batches for another device] (src/data/gather.hpp), on the simulated
// GPU: host rows gathered, then one transfer per array into the batch.
TEST_CASE("ArrayDataset: a parent on gpu(0) gets its batch there; host rows go over in one copy per array") {
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("ds");
  data::ArrayDataset ds = numbered(host, 10);
  NDManager g = NDManager::new_base_manager("steps", Device::gpu(0));
  const std::uint64_t host_bytes = memory::stats(Device::cpu()).current_bytes;
  {
    data::Batch b = ds.get_batch(g, std::vector<std::int64_t>{7, 2, 3, 4});
    CHECK(b.manager.device() == Device::gpu(0));
    CHECK(b.data[0].device() == Device::gpu(0));
    CHECK(b.labels[0].device() == Device::gpu(0));
    CHECK(gpu.from_host_calls() == 2);
    CHECK(labels_of(b) == std::vector<std::int64_t>{7, 2, 3, 4});
    CHECK(b.data[0].to_vector<float>() == std::vector<float>{21, 22, 23, 6, 7, 8, 9, 10, 11, 12, 13, 14});
    CHECK(memory::stats(Device::cpu()).current_bytes == host_bytes);  // the host staging copies are gone
    CHECK(gpu.bytes_in_use() > 0);
  }
  CHECK(gpu.bytes_in_use() == 0);
  // The reverse: rows on the GPU, a batch for a host parent (gathered there, one copy back).
  data::ArrayDataset on_gpu(ds.features().to_device(Device::gpu(0)), ds.labels().to_device(Device::gpu(0)));
  gpu.reset_counts();
  data::Batch b = on_gpu.get_batch(host, std::vector<std::int64_t>{1, 9});
  CHECK(b.data[0].device() == Device::cpu());
  CHECK(gpu.to_host_calls() == 2);
  CHECK(labels_of(b) == std::vector<std::int64_t>{1, 9});
  // A bad index is still InvalidArgument, before any copy.
  CHECK_THROWS_WITH_AS(ds.get_batch(g, std::vector<std::int64_t>{10}), doctest::Contains("outside [0, 10)"),
                       InvalidArgument);
  CHECK(g.sub_managers().empty());
}

TEST_CASE("ArrayDataset: prefetched batches for gpu(0) are copied on the prefetch thread, the same as made in place") {
  test::SimGpu gpu;
  NDManager host = NDManager::new_base_manager("ds");
  data::ArrayDataset ds = numbered(host, 50);
  ds.set_batch_size(8).set_shuffle(true, 3);
  NDManager g = NDManager::new_base_manager("steps", Device::gpu(0));
  std::vector<std::vector<float>> in_place, prefetched;
  for (int depth : {0, 2}) {
    ds.set_prefetch(depth);
    for (data::Batch& b : ds.batches(g, 1)) {
      CHECK(b.data[0].device() == Device::gpu(0));
      (depth ? prefetched : in_place).push_back(b.data[0].to_vector<float>());
    }
  }
  CHECK(in_place.size() == 7);
  CHECK(prefetched == in_place);
  CHECK(gpu.from_host_calls() == 2 * 2 * 7);
  CHECK(gpu.bytes_in_use() == 0);  // every batch closed with its manager
}
