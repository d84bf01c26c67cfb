// Data-parallel training (src/distributed/gradient_reducer.cpp with the
// Trainer's GradientReducer hook and ArrayDataset::set_shard): N ranks ×
// batch 16 follow the loss curve of one process × batch 16·N on the same
// samples, end with parameters identical to the bit on every rank, report
// metrics over all ranks, and keep memory flat with auto-close on.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>

#include "distributed_test_util.hpp"
#include "test_util.hpp"

namespace ndgc {
namespace {

using distributed::ReduceOp;

data::ArrayDataset toy(const ManagerRef& m, std::int64_t rows) {
  set_random_seed(5);  // the same samples on every rank
  NDArray x = m.random_normal({rows, 8});
  NDArray y = x.get(":, 0:3").argmax(1);
  return data::ArrayDataset(x, y);
}

training::TrainingConfig config() {
  training::TrainingConfig c;
  c.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
  c.optimizer = std::make_shared<nn::Sgd>(0.2, 0.9);
  c.metrics.push_back(std::make_shared<training::Accuracy>());
  return c;
}

std::unique_ptr<Model> model(std::uint64_t seed) {
  auto m = std::make_unique<Model>("toy", std::make_unique<nn::Mlp>(8, 3, std::vector<std::int64_t>{16}));
  set_random_seed(seed);
  m->initialize(Shape{16, 8});
  return m;
}

struct Losses : training::TrainingListener {
  std::vector<double> values;
  void on_batch_end(training::Trainer&, const training::BatchResult& r) override {
    if (r.training) values.push_back(r.loss);
  }
};

std::vector<std::vector<float>> parameter_values(Model& m) {
  std::vector<std::vector<float>> out;
  for (const nn::NamedParameter& p : m.parameters()) out.push_back(p.parameter->array().to_vector<float>());
  return out;
}

}  // namespace

TEST_CASE("N ranks x batch 16 follow 1 process x batch 16N; parameters identical on every rank; memory flat") {
  auto pg = test::group();
  const int n = pg.size();
  constexpr std::int64_t kRows = 256, kEpochs = 4;

  // The reference: one process, the global batch, no reducer.
  auto reference = model(42);
  data::ArrayDataset ref_set = toy(reference->manager(), kRows);
  ref_set.set_batch_size(16 * n).set_shuffle(true, 7);
  auto ref_losses = std::make_shared<Losses>();
  training::TrainingConfig rc = config();
  rc.listeners.push_back(ref_losses);
  training::Trainer ref_trainer(*reference, rc);
  training::fit(ref_trainer, kEpochs, ref_set);

  // Data-parallel: each rank starts from different parameters, which the
  // trainer replaces with rank 0's (seed 42, the reference's).
  test::AutoClose ac(true);
  auto local = model(42 + std::uint64_t(pg.rank()));
  data::ArrayDataset shard = toy(local->manager(), kRows);
  shard.set_batch_size(16).set_shuffle(true, 7).set_shard(pg.rank(), n);
  CHECK(shard.batch_count() == ref_set.batch_count());
  auto losses = std::make_shared<Losses>();
  auto memory = std::make_shared<training::MemoryListener>();
  training::TrainingConfig dc = config();
  dc.listeners = {losses, memory};
  dc.gradient_reducer = distributed::make_gradient_reducer(pg, 512);  // small buckets: several per step
  training::Trainer trainer(*local, dc);
  training::fit(trainer, kEpochs, shard);

  // The loss curve: the mean of the ranks' batch losses (equal halves) is
  // the global batch's loss.
  REQUIRE(losses->values.size() == ref_losses->values.size());
  NDManager m = NDManager::new_base_manager("check");
  NDArray curve = m.create(losses->values);
  pg.all_reduce(curve, ReduceOp::mean);
  const std::vector<double> mean_curve = curve.to_vector<double>();
  for (std::size_t i = 0; i < mean_curve.size(); ++i) {
    CAPTURE(i);
    CHECK(mean_curve[i] == doctest::Approx(ref_losses->values[i]).epsilon(1e-4));
  }
  // Metrics over every rank's rows: the reference's epoch figures.
  for (std::int64_t e = 0; e < kEpochs; ++e) {
    CHECK(trainer.history()[std::size_t(e)].at("train_loss") ==
          doctest::Approx(ref_trainer.history()[std::size_t(e)].at("train_loss")).epsilon(1e-4));
    CHECK(trainer.history()[std::size_t(e)].at("train_accuracy") ==
          doctest::Approx(ref_trainer.history()[std::size_t(e)].at("train_accuracy")).epsilon(0.02));
  }
  // Parameters: close to the reference's, and the same bits on every rank.
  const auto mine = parameter_values(*local), ref = parameter_values(*reference);
  for (std::size_t p = 0; p < mine.size(); ++p)
    for (std::size_t i = 0; i < mine[p].size(); ++i) CHECK(mine[p][i] == doctest::Approx(ref[p][i]).epsilon(1e-3));
  for (const nn::NamedParameter& p : local->parameters()) {
    NDArray all = pg.all_gather(p.parameter->array());
    const std::vector<float> rows = all.to_vector<float>();
    const std::size_t each = rows.size() / std::size_t(n);
    for (int r = 1; r < n; ++r) CHECK(std::memcmp(rows.data(), rows.data() + std::size_t(r) * each, each * 4) == 0);
  }
  // Memory: flat from the second epoch on, on every rank.
  const auto& rows = memory->rows();
  REQUIRE(rows.size() == std::size_t(kEpochs));
  for (std::size_t e = 2; e < rows.size(); ++e) {
    CAPTURE(e);
    CHECK(rows[e].host_bytes == rows[1].host_bytes);
    CHECK(rows[e].trainer_arrays == 0);
  }
}

namespace {

// Forwards to the real reducer and records what the Trainer called, in order.
struct Recording : training::GradientReducer {
  std::shared_ptr<training::GradientReducer> inner;
  std::vector<std::string> calls;
  explicit Recording(std::shared_ptr<training::GradientReducer> r) : inner(std::move(r)) {}
  int rank() const override { return inner->rank(); }
  int size() const override { return inner->size(); }
  void broadcast_parameters(const NDList& p) override { inner->broadcast_parameters(p); }
  bool begin_reduction(const NDList& p, std::int64_t rows) override {
    calls.push_back("begin");
    return inner->begin_reduction(p, rows);
  }
  void gradient_ready(std::size_t i) override {
    calls.push_back("ready " + std::to_string(i));
    inner->gradient_ready(i);
  }
  void reduce_gradients(const NDList& p, std::int64_t rows) override {
    calls.push_back("reduce");
    inner->reduce_gradients(p, rows);
  }
  void sum(std::vector<double>& v) override { inner->sum(v); }
};

std::vector<std::vector<float>> train_data_parallel(distributed::ProcessGroup& pg, bool overlap,
                                                    std::shared_ptr<Recording>* recording = nullptr) {
  auto local = model(42 + std::uint64_t(pg.rank()));
  data::ArrayDataset shard = toy(local->manager(), 128);
  shard.set_batch_size(16).set_shuffle(true, 7).set_shard(pg.rank(), pg.size());
  training::TrainingConfig c = config();
  auto reducer = std::make_shared<Recording>(distributed::make_gradient_reducer(pg, 256, overlap));
  if (recording) *recording = reducer;
  c.gradient_reducer = reducer;
  training::Trainer trainer(*local, c);
  training::fit(trainer, 2, shard);
  return parameter_values(*local);
}

}  // namespace

TEST_CASE("overlapped buckets (started during backward) give the bits of buckets started after it") {
  auto pg = test::group();
  std::shared_ptr<Recording> overlapped, after;
  const auto a = train_data_parallel(pg, true, &overlapped);
  const auto b = train_data_parallel(pg, false, &after);
  REQUIRE(a.size() == b.size());
  for (std::size_t p = 0; p < a.size(); ++p) {
    CAPTURE(p);
    REQUIRE(a[p].size() == b[p].size());
    CHECK(std::memcmp(a[p].data(), b[p].data(), a[p].size() * sizeof(float)) == 0);
  }
  // With overlap, every parameter is reported during backward, before the
  // step's reduce; the 4 parameters (2 layers: weight, bias) come last layer
  // first. Within a layer, weight and bias are inputs of one fused node
  // (Note [Fused linear]), so their order there is not part of the contract.
  REQUIRE(overlapped->calls.size() >= 6);
  CHECK(overlapped->calls[0] == "begin");
  const std::set<std::string> last_layer(overlapped->calls.begin() + 1, overlapped->calls.begin() + 3);
  const std::set<std::string> first_layer(overlapped->calls.begin() + 3, overlapped->calls.begin() + 5);
  CHECK(last_layer == std::set<std::string>{"ready 2", "ready 3"});
  CHECK(first_layer == std::set<std::string>{"ready 0", "ready 1"});
  CHECK(overlapped->calls[5] == "reduce");
  CHECK(std::count(after->calls.begin(), after->calls.end(), "reduce") ==
        std::count(overlapped->calls.begin(), overlapped->calls.end(), "reduce"));
  for (const std::string& call : after->calls) CHECK((call == "begin" || call == "reduce"));
  // And the same bits on every rank.
  NDManager m = NDManager::new_base_manager("check");
  for (const auto& values : a) {
    NDArray all = pg.all_gather(m.create(values));
    const std::vector<float> rows = all.to_vector<float>();
    for (int r = 1; r < pg.size(); ++r)
      CHECK(std::memcmp(rows.data(), rows.data() + std::size_t(r) * values.size(), values.size() * 4) == 0);
  }
}

TEST_CASE("data-parallel steps in a workspace: the buckets stay in ordinary memory; the bits of steps without one") {
  auto pg = test::group();
  const auto plain = train_data_parallel(pg, true);
  auto local = model(42 + std::uint64_t(pg.rank()));
  data::ArrayDataset shard = toy(local->manager(), 128);
  shard.set_batch_size(16).set_shuffle(true, 7).set_shard(pg.rank(), pg.size());
  training::TrainingConfig c = config();
  c.gradient_reducer = distributed::make_gradient_reducer(pg, 256);
  c.workspace_mode = training::WorkspaceMode::enabled;  // buckets made during the first step, inside it
  training::Trainer trainer(*local, c);
  training::fit(trainer, 2, shard);
  const auto in_workspace = parameter_values(*local);
  REQUIRE(in_workspace.size() == plain.size());
  for (std::size_t p = 0; p < plain.size(); ++p)
    CHECK(std::memcmp(in_workspace[p].data(), plain[p].data(), plain[p].size() * sizeof(float)) == 0);
}

TEST_CASE("the reducer refuses a zero bucket size") {
  auto pg = test::group();
  CHECK_THROWS_WITH_AS(distributed::make_gradient_reducer(pg, 0), doctest::Contains("bucket_bytes must be positive"),
                       InvalidArgument);
}

}  // namespace ndgc
