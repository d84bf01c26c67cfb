// Every CPU kernel that splits its work over the intra-op pool gives the same
// bits at 1, 2, 3 and 7 threads, on sizes around the grain and on views, and
// is right (a reference loop or the small-size kernels' values). Errors from
// a piece reach the caller typed and named. See support/parallel.hpp.
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <ndgc/ndgc.hpp>

#include "ops_test_util.hpp"
#include "test_util.hpp"
#include "support/parallel.hpp"

using namespace ndgc;
using namespace ops_test;
using support::kGrainSize;

namespace {

constexpr int kThreadCounts[] = {1, 2, 3, 7};

using test::Threads;

// The raw bytes of every array f returns, at each thread count; all must
// equal the 1-thread run's.
void check_same_bits(const std::function<std::vector<NDArray>(ManagerRef)>& f) {
  std::vector<std::vector<char>> first;
  for (int threads : kThreadCounts) {
    Threads keep(threads);
    NDManager m = fresh();
    std::vector<NDArray> out = f(m);
    std::vector<std::vector<char>> bytes;
    for (const NDArray& a : out) {
      NDArray c = a.to_type(a.dtype());  // a contiguous copy
      std::vector<double> v = c.to_vector<double>();
      std::vector<char> b(v.size() * sizeof(double));
      std::memcpy(b.data(), v.data(), b.size());
      bytes.push_back(std::move(b));
    }
    INFO("threads " << threads);
    if (threads == 1) {
      first = std::move(bytes);
    } else {
      REQUIRE(bytes.size() == first.size());
      for (std::size_t i = 0; i < bytes.size(); ++i) {
        INFO("result " << i);
        CHECK(bytes[i] == first[i]);
      }
    }
  }
}

NDArray values_like(ManagerRef m, Shape shape, std::uint64_t seed = 5) {
  set_random_seed(seed);
  return m.random_normal(shape);
}

const std::int64_t kSizes[] = {kGrainSize - 1, kGrainSize, kGrainSize + 1, 3 * kGrainSize + 5};

}  // namespace

TEST_CASE("element-wise kernels: the same bits at every thread count, and right") {
  for (std::int64_t n : kSizes) {
    INFO("n " << n);
    check_same_bits([n](ManagerRef m) {
      NDArray a = values_like(m, {n}, 1), b = values_like(m, {n}, 2);
      return std::vector<NDArray>{a + b, a * b, a.exp(), a.tanh(), a.sigmoid(), a.relu(), a.pow(b.abs()),
                                  where(a.gt(b), a, b), a.maximum(b), a + 2.5f, a.to_type(DataType::float64)};
    });
  }
  // Broadcast rows that the fixed chunks cut in the middle, and a transposed view.
  check_same_bits([](ManagerRef m) {
    NDArray a = values_like(m, {301, 257}, 3), b = values_like(m, {257}, 4);
    NDArray t = values_like(m, {257, 301}, 6).transpose();
    return std::vector<NDArray>{a + b, a * t, t.exp(), (a - b).square()};
  });
  Threads keep(3);
  NDManager m = fresh();
  NDArray a = values_like(m, {301, 257}, 3), b = values_like(m, {257}, 4);
  check_values(a + b, ref_broadcast(values(a), a.shape(), values(b), b.shape(), a.shape(),
                                    [](double x, double y) { return double(float(x) + float(y)); }));
  NDArray t = values_like(m, {257, 301}, 6).transpose();
  NDArray tc = t.to_type(DataType::float32);  // contiguous
  check_values(a * t, ref_broadcast(values(a), a.shape(), values(tc), tc.shape(), a.shape(),
                                    [](double x, double y) { return double(float(x) * float(y)); }));
}

TEST_CASE("reductions: fixed chunks give the same bits at every thread count") {
  for (std::int64_t n : kSizes) {
    check_same_bits([n](ManagerRef m) {
      NDArray a = values_like(m, {n});
      return std::vector<NDArray>{a.sum(), a.mean(), a.max(), a.min()};
    });
  }
  check_same_bits([](ManagerRef m) {
    NDArray a = values_like(m, {600, 300}), w = values_like(m, {2, 70001});
    NDArray i = (values_like(m, {700, 100}) * 1000.0f).to_type(DataType::int32);
    return std::vector<NDArray>{a.sum({0}),    a.mean({0}),   a.max({0}),          a.sum({1}),
                                a.transpose().sum({1}), w.sum({1}), w.mean({1}), w.max({1}),
                                i.sum({0}),    i.sum(),       a.argmax(1),         a.argmin(0),
                                a.softmax(1),  a.log_softmax(1), a.softmax(0)};
  });
  // Right, not only repeatable: against double-precision sums.
  Threads keep(3);
  NDManager m = fresh();
  NDArray a = values_like(m, {600, 300});
  std::vector<double> v = values(a), col(300, 0.0), row(600, 0.0);
  for (std::size_t r = 0; r < 600; ++r)
    for (std::size_t c = 0; c < 300; ++c) {
      col[c] += v[r * 300 + c];
      row[r] += v[r * 300 + c];
    }
  check_values(a.sum({0}), col, 1e-4);
  check_values(a.sum({1}), row, 1e-4);
  NDArray w = values_like(m, {2, 70001});
  std::vector<double> wv = values(w);
  check_values(w.sum({1}), {std::accumulate(wv.begin(), wv.begin() + 70001, 0.0),
                            std::accumulate(wv.begin() + 70001, wv.end(), 0.0)},
               1e-3);
}

TEST_CASE("matrix products: fixed output tiles give the same bits at every thread count") {
  // 1040 x 1100 is cut 4 x 4 (both sides past 1024), with ragged last tiles;
  // the others into row or column blocks (Note [Products by fixed tiles]).
  check_same_bits([](ManagerRef m) {
    NDArray x = values_like(m, {512, 300}), w = values_like(m, {300, 700});
    NDArray tall = values_like(m, {700, 64}), narrow = values_like(m, {64, 129});
    NDArray batched = values_like(m, {6, 100, 80}), right = values_like(m, {6, 80, 90});
    NDArray wide = values_like(m, {1040, 8}), wider = values_like(m, {8, 1100});
    return std::vector<NDArray>{x.matmul(w), tall.matmul(narrow), batched.matmul(right),
                                w.transpose().matmul(x.transpose()), x.to_type(DataType::float64).matmul(
                                                                         w.to_type(DataType::float64)),
                                wide.matmul(wider)};
  });
  Threads keep(3);
  NDManager m = fresh();
  NDArray x = values_like(m, {512, 300}), w = values_like(m, {300, 700});
  check_values(x.matmul(w), ref_matmul(values(x), values(w), 512, 300, 700), 1e-4);
  NDArray wide = values_like(m, {1040, 8}), wider = values_like(m, {8, 1100});
  check_values(wide.matmul(wider), ref_matmul(values(wide), values(wider), 1040, 8, 1100), 1e-4);
}

TEST_CASE("a training step (matmul_add, cross-entropy, Adam, gather) is the same bits at every thread count") {
  check_same_bits([](ManagerRef m) {
    // Rows of 200 features, batches of 256 from a shuffled dataset: gather,
    // wide products, the fused loss and Adam all above the grain.
    set_random_seed(9);
    NDArray features = m.random_normal({1024, 200});
    NDArray labels = features.get(":, 0:10").argmax(1);
    data::ArrayDataset d(features, labels);
    d.set_batch_size(256).set_shuffle(true, 3);
    set_random_seed(4);
    Model model("wide", std::make_unique<nn::Mlp>(200, 200, std::vector<std::int64_t>{256, 256}));
    model.initialize(Shape{256, 200});
    training::TrainingConfig c;
    c.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
    c.optimizer = std::make_shared<nn::Adam>(1e-3);
    training::Trainer trainer(model, c);
    trainer.notify_epoch_begin(0);
    std::vector<NDArray> out;
    for (data::Batch& b : d.batches(m, 0)) {
      out.push_back(m.create(b.data[0].to_vector<float>(), b.data[0].shape()));  // outlives the batch
      out.push_back(m.create(std::vector<double>{trainer.train_batch(b, 0)}));
    }
    for (const nn::NamedParameter& p : model.parameters()) {
      NDArray w = p.parameter->array();
      out.push_back(m.create(w.to_vector<float>(), w.shape()));  // outlives the model
    }
    return out;
  });
}

TEST_CASE("an error in one piece of a kernel reaches the caller, typed and named") {
  for (int threads : kThreadCounts) {
    Threads keep(threads);
    NDManager m = fresh();
    NDArray a = m.ones({4 * kGrainSize}, DataType::int32);
    NDArray z = m.ones({4 * kGrainSize}, DataType::int32);
    z.get("70000").fill_(0);  // one zero in the third chunk
    CHECK_THROWS_AS(a / z, InvalidArgument);
    try {
      (void)(a / z);
    } catch (const InvalidArgument& e) {
      CHECK(std::string(e.what()).find("integer division by zero") != std::string::npos);
    }
    NDArray logits = m.zeros({8000, 10});
    NDArray labels = m.zeros({8000}, DataType::int64);
    labels.get("4000").fill_(12);
    labels.get("7000").fill_(-1);  // a later chunk fails too
    try {
      (void)sparse_softmax_cross_entropy(logits, labels);
      FAIL("no error");
    } catch (const InvalidArgument& e) {
      // The first bad row, as on one thread.
      CHECK(std::string(e.what()).find("label 12 at row 4000") != std::string::npos);
    }
  }
}
