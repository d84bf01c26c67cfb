// Fault injection (issue 5): every native allocation of a training step (an
// MLP's and an LSTM's) and of a predict() call is made to fail, one at a time.
//
// For N = 1, 2, ... the N-th allocation of the call fails (the test-only hook
// memory::fail_allocation_after in src/memory/allocator.hpp). The call must
// throw OutOfMemory — nothing else, no crash, no terminate — and leave every
// manager consistent: debug::inspect still walks the tree, each manager's
// array count and bytes agree with its array list, the arrays' bytes agree
// with the allocator's count, and the same call succeeds once the fault is
// gone. After the managers close, host bytes in use and open arrays are back
// to where they were (docs/design.md §3 invariant 4, §8). The sweep ends at the
// first N the call completes without reaching: that N - 1 is the number of
// allocations the call makes, every one of them tested.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>

#include <ndgc/inference.hpp>
#include <ndgc/ndgc.hpp>
#include <ndgc/training.hpp>

#include "core/registry.hpp"
#include "memory/allocator.hpp"
#include "test_util.hpp"

using namespace ndgc;

namespace {

// Disarms the hook whatever happens.
struct Armed {
  explicit Armed(std::uint64_t n) { memory::fail_allocation_after(n); }
  ~Armed() { memory::fail_allocation_after(0); }
};

// Each manager's count and bytes agree with its listed arrays; returns the
// bytes of the whole tree.
std::uint64_t check_tree(const debug::ManagerInfo& m, int& bad) {
  std::uint64_t listed = 0, total = 0;
  for (const debug::ArrayInfo& a : m.arrays) listed += a.bytes;
  if (m.array_count != m.arrays.size() || m.bytes != listed || !m.open) ++bad;
  total += listed;
  for (const debug::ManagerInfo& c : m.children) total += check_tree(c, bad);
  return total;
}

// The manager tree below `root` is consistent, and every host byte in use
// beyond `unowned` (bytes held outside managers before the run) is charged
// to a live array.
void check_consistent(const ManagerRef& root, std::uint64_t unowned, int& bad) {
  debug::Dump d = debug::inspect(root, true);
  (void)d.to_text();
  (void)debug::dump(root, true, debug::Format::json);
  check_tree(d.root, bad);
  const std::uint64_t arrays = debug::snapshot().bytes();
  if (test::host_bytes() != unowned + arrays) ++bad;
}

struct SweepResult {
  std::uint64_t allocations = 0;  // allocations the call makes, each made to fail once
  int wrong_error = 0, inconsistent = 0, not_recovered = 0, leaked = 0;
  std::string first_problem;
};

// One scenario: `setup` builds fresh state (its managers hang under the
// returned root), `call` is what is swept. Runs setup, arms the hook, calls,
// checks, retries unarmed, tears down; for N = 1, 2, ... until the call no
// longer reaches the N-th allocation.
template <class State>
SweepResult sweep(const std::function<std::unique_ptr<State>()>& setup,
                  const std::function<ManagerRef(State&)>& root, const std::function<void(State&)>& call,
                  std::uint64_t max_n = 100000) {
  SweepResult r;
  gc::sweep();
  const std::uint64_t bytes_before = test::host_bytes();
  const std::uint64_t open_before = detail::Registry::instance().open_arrays();
  auto note = [&](int& counter, const std::string& what) {
    if (counter++ == 0 && r.first_problem.empty()) r.first_problem = what;
  };
  for (std::uint64_t n = 1; n <= max_n; ++n) {
    bool failed = false;
    {
      std::unique_ptr<State> state = setup();
      const std::uint64_t unowned = test::host_bytes() - debug::snapshot().bytes();
      try {
        Armed armed(n);
        call(*state);
      } catch (const OutOfMemory&) {
        failed = true;
      } catch (const std::exception& e) {
        failed = true;
        note(r.wrong_error, "N=" + std::to_string(n) + ": not OutOfMemory: " + e.what());
      }
      if (!failed) {
        r.allocations = n - 1;
        break;
      }
      int bad = 0;
      try {
        check_consistent(root(*state), unowned, bad);
      } catch (const std::exception& e) {
        ++bad;
        note(r.inconsistent, "N=" + std::to_string(n) + ": dump failed: " + e.what());
      }
      if (bad) note(r.inconsistent, "N=" + std::to_string(n) + ": counts disagree");
      try {
        call(*state);  // the fault is gone: the same call works
      } catch (const std::exception& e) {
        note(r.not_recovered, "N=" + std::to_string(n) + ": retry failed: " + e.what());
      }
    }  // state's managers close here
    gc::poll();
    if (test::host_bytes() != bytes_before || detail::Registry::instance().open_arrays() != open_before)
      note(r.leaked, "N=" + std::to_string(n) + ": " + std::to_string(test::host_bytes() - bytes_before) +
                         " bytes still in use after the managers closed");
  }
  return r;
}

// ---- a training step ------------------------------------------------------------

struct TrainState {
  explicit TrainState(std::unique_ptr<nn::Block> block) : model("fault-train", std::move(block)) {}
  Model model;
  std::unique_ptr<data::ArrayDataset> data;
  std::unique_ptr<training::Trainer> trainer;
};

// 16 examples of `example` shape whose first 4 values decide the class.
std::unique_ptr<TrainState> train_setup(bool warm, std::unique_ptr<nn::Block> block, Shape example) {
  auto s = std::make_unique<TrainState>(std::move(block));
  Shape batch = example;
  batch.insert(0, 8);
  s->model.initialize(batch);
  set_random_seed(7);
  example.insert(0, 16);
  NDArray x = s->model.manager().random_normal(example);
  NDArray y = x.reshape({16, -1}).get(":, 0:4").argmax(1);
  s->data = std::make_unique<data::ArrayDataset>(x, y);
  s->data->set_batch_size(8);
  training::TrainingConfig c;
  c.loss = std::make_shared<nn::SoftmaxCrossEntropyLoss>();
  c.optimizer = std::make_shared<nn::Adam>(1e-2);
  c.metrics.push_back(std::make_shared<training::Accuracy>());
  s->trainer = std::make_unique<training::Trainer>(s->model, c);
  if (warm) {  // the optimizer's state exists: a steady-state step
    const std::int64_t rows[] = {8, 9, 10, 11, 12, 13, 14, 15};
    data::Batch b = s->data->get_batch(s->trainer->manager(), rows);
    s->trainer->train_batch(b);
  }
  return s;
}

std::unique_ptr<TrainState> train_setup(bool warm, std::vector<std::int64_t> hidden = {16, 8}) {
  return train_setup(warm, std::make_unique<nn::Mlp>(12, 4, std::move(hidden)), Shape{12});
}

// LSTM(8) over 3 steps of 4 features, the last step's h into Linear(4).
std::unique_ptr<TrainState> lstm_setup(bool warm) {
  auto net = std::make_unique<nn::SequentialBlock>();
  net->add(std::make_unique<nn::LSTM>(8));
  net->add(std::make_unique<nn::LambdaBlock>(
      "last step", [](const NDList& in) { return NDList{in[0].get(":, -1, :")}; },
      [](const Shape& s) { return Shape{s[0], s[2]}; }));
  net->add(std::make_unique<nn::Linear>(4));
  return train_setup(warm, std::move(net), Shape{3, 4});
}

// One step as fit() runs it: the batch (gathered in a sub-manager of the
// trainer's), forward, loss, backward, the optimizer's update, metrics; the
// batch's manager closes at the end.
void train_step(TrainState& s) {
  const std::int64_t rows[] = {0, 1, 2, 3, 4, 5, 6, 7};
  data::Batch b = s.data->get_batch(s.trainer->manager(), rows);
  s.trainer->train_batch(b);
}

// ---- a predict() call ----------------------------------------------------------

struct Classify : inference::Translator<std::vector<float>, std::vector<std::int64_t>> {
  NDList process_input(const ManagerRef& ctx, const std::vector<float>& in) override {
    return NDList{ctx.create(in, Shape{std::int64_t(in.size() / 12), 12})};
  }
  std::vector<std::int64_t> process_output(const ManagerRef&, const NDList& out) override {
    return out.head().softmax().argmax(1).to_vector<std::int64_t>();
  }
};

struct PredictState {
  Model model{"fault-predict", std::make_unique<nn::Mlp>(12, 4, std::vector<std::int64_t>{16, 8})};
  std::unique_ptr<inference::Predictor<std::vector<float>, std::vector<std::int64_t>>> predictor;
  std::vector<float> input = std::vector<float>(4 * 12, 0.5f);
};

std::unique_ptr<PredictState> predict_setup() {
  auto s = std::make_unique<PredictState>();
  s->model.initialize(Shape{1, 12});
  s->predictor = std::make_unique<inference::Predictor<std::vector<float>, std::vector<std::int64_t>>>(
      s->model, std::make_shared<Classify>());
  return s;
}

void report(const std::string& what, const SweepResult& r) {
  MESSAGE("fault injection, " << what << ": " << r.allocations << " allocations swept");
  if (!r.first_problem.empty()) MESSAGE("first problem: " << r.first_problem);
  CHECK(r.allocations > 0);
  CHECK(r.wrong_error == 0);
  CHECK(r.inconsistent == 0);
  CHECK(r.not_recovered == 0);
  CHECK(r.leaked == 0);
}

}  // namespace

TEST_CASE("fault injection: every allocation of a training step fails once, cleanly") {
  for (bool autoclose : {false, true}) {
    test::AutoClose mode(autoclose);
    for (bool warm : {false, true}) {
      SweepResult r = sweep<TrainState>([warm] { return train_setup(warm); },
                                        [](TrainState& s) { return s.model.manager(); }, train_step);
      std::string what = std::string(warm ? "a steady-state" : "the first") + " training step, auto-close " +
                         (autoclose ? "on" : "off");
      report(what, r);
    }
  }
}

TEST_CASE("fault injection: every allocation of an LSTM training step fails once, cleanly") {
  for (bool autoclose : {false, true}) {
    test::AutoClose mode(autoclose);
    SweepResult r = sweep<TrainState>([] { return lstm_setup(true); },
                                      [](TrainState& s) { return s.model.manager(); }, train_step);
    report(std::string("a steady-state LSTM training step, auto-close ") + (autoclose ? "on" : "off"), r);
  }
}

TEST_CASE("fault injection: a wide step whose kernels run on the pool fails as cleanly") {
  // 512-wide layers: Adam and the weights' element-wise work are above
  // the grain, so 3 threads split them (support/parallel.hpp).
  // Allocations stay on the calling thread: the same sweep holds.
  const int saved = num_threads();
  set_num_threads(3);
  test::AutoClose mode(true);
  SweepResult r = sweep<TrainState>([] { return train_setup(true, {512, 512}); },
                                    [](TrainState& s) { return s.model.manager(); }, train_step);
  set_num_threads(saved);
  report("a steady-state wide training step on 3 threads, auto-close on", r);
}

TEST_CASE("fault injection: every allocation of a predict() call fails once, cleanly") {
  for (bool autoclose : {false, true}) {
    test::AutoClose mode(autoclose);
    SweepResult r = sweep<PredictState>(
        predict_setup, [](PredictState& s) { return s.model.manager(); },
        [](PredictState& s) { (void)s.predictor->predict(s.input); });
    report(std::string("a predict() call, auto-close ") + (autoclose ? "on" : "off"), r);
  }
}

TEST_CASE("fault injection: the hook itself") {
  NDManager m = NDManager::new_base_manager("hook");
  memory::fail_allocation_after(2);
  NDArray a = m.ones({4});  // the first allocation succeeds
  CHECK_THROWS_AS(m.ones({4}), OutOfMemory);
  NDArray b = m.ones({4});  // disarmed after firing
  memory::fail_allocation_after(0);
  CHECK(b.sum().item<float>() == 4.0f);
  CHECK(m.array_count() == 3);  // a, b and b.sum(): the failed one left nothing behind
}
