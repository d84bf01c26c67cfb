// Predictor and Translator: managers per call, no leaks over a thousand
// calls, no recording, threads.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include <ndgc/inference.hpp>
#include <ndgc/ndgc.hpp>

#include "test_util.hpp"

namespace ndgc {
namespace {

// Rows of floats in, arg-max classes out; everything in the context.
struct Classify : inference::Translator<std::vector<float>, std::vector<std::int64_t>> {
  NDList process_input(const ManagerRef& ctx, const std::vector<float>& in) override {
    return NDList{ctx.create(in, Shape{std::int64_t(in.size() / 6), 6})};
  }
  std::vector<std::int64_t> process_output(const ManagerRef&, const NDList& out) override {
    return out.head().argmax(1).to_vector<std::int64_t>();
  }
};

// Returns the raw scores.
struct Scores : inference::Translator<std::vector<float>, std::vector<float>> {
  NDList process_input(const ManagerRef& ctx, const std::vector<float>& in) override {
    return NDList{ctx.create(in, Shape{1, 6})};
  }
  std::vector<float> process_output(const ManagerRef&, const NDList& out) override {
    return out.head().softmax().to_vector<float>();
  }
};

std::unique_ptr<nn::Block> predictor_net() { return std::make_unique<nn::Mlp>(6, 3, std::vector<std::int64_t>{8}); }

}  // namespace

TEST_CASE("managers: predictor under the model, a context per call closed when it returns") {
  Model model("m", predictor_net());
  model.initialize(Shape{1, 6});
  struct Spy : inference::Translator<int, int> {
    ManagerRef seen, parent;
    NDList process_input(const ManagerRef& ctx, const int&) override {
      seen = ctx;
      parent = ctx.parent();
      return NDList{ctx.ones({1, 6})};
    }
    int process_output(const ManagerRef& ctx, const NDList& out) override {
      CHECK(out.head().manager().same(ctx));
      return int(out.head().shape()[1]);
    }
  };
  auto spy = std::make_shared<Spy>();
  inference::Predictor<int, int> predictor(model, spy);
  CHECK(predictor.manager().parent().same(model.manager()));
  CHECK(predictor.predict(0) == 3);
  CHECK(spy->parent.same(predictor.manager()));
  CHECK_FALSE(spy->seen.is_open());
}

TEST_CASE("predict() a thousand times leaks nothing, with auto-close off and on") {
  for (bool autoclose : {false, true}) {
    CAPTURE(autoclose);
    test::AutoClose ac(autoclose);
    Model model("m", predictor_net());
    model.initialize(Shape{1, 6});
    inference::Predictor<std::vector<float>, std::vector<std::int64_t>> predictor(model, std::make_shared<Classify>());
    std::vector<float> rows(4 * 6);
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = float(i % 7) - 3;
    predictor.predict(rows);  // warm up
    const std::size_t model_arrays = model.manager().array_count();
    const std::size_t predictor_arrays = predictor.manager().array_count();
    const std::size_t sub_managers = predictor.manager().sub_managers().size();
    const std::uint64_t bytes = test::host_bytes();
    for (int i = 0; i < 1000; ++i) CHECK(predictor.predict(rows).size() == 4);
    gc::poll();
    CHECK(model.manager().array_count() == model_arrays);
    CHECK(predictor.manager().array_count() == predictor_arrays);
    CHECK(predictor.manager().sub_managers().size() == sub_managers);
    CHECK(test::host_bytes() == bytes);
  }
}

TEST_CASE("predict() does not record into the caller's collector") {
  Model model("m", predictor_net());
  model.initialize(Shape{1, 6});
  inference::Predictor<std::vector<float>, std::vector<float>> predictor(model, std::make_shared<Scores>());
  GradientCollector c;
  std::vector<float> p = predictor.predict(std::vector<float>(6, 0.5f));
  CHECK(p.size() == 3);
  CHECK(c.recorded_ops() == 0);
  CHECK(autograd::is_recording());
}

TEST_CASE("predict() from several threads at once") {
  Model model("m", predictor_net());
  model.initialize(Shape{1, 6});
  inference::Predictor<std::vector<float>, std::vector<float>> predictor(model, std::make_shared<Scores>());
  std::vector<std::vector<float>> inputs(4);
  std::vector<std::vector<float>> expected;
  for (std::size_t t = 0; t < inputs.size(); ++t) {
    for (int j = 0; j < 6; ++j) inputs[t].push_back(float(t) * 0.3f - float(j) * 0.1f);
    expected.push_back(predictor.predict(inputs[t]));
  }
  const std::size_t arrays = model.manager().array_count();
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < inputs.size(); ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i)
        if (predictor.predict(inputs[t]) != expected[t]) ++mismatches;
    });
  for (auto& th : threads) th.join();
  CHECK(mismatches.load() == 0);
  CHECK(model.manager().array_count() == arrays);
  CHECK(predictor.manager().array_count() == 0);
}

TEST_CASE("predictor errors") {
  Model model("m", predictor_net());
  CHECK_THROWS_WITH_AS((inference::Predictor<std::vector<float>, std::vector<float>>(model, std::make_shared<Scores>())),
                       doctest::Contains("is not initialized"), InvalidArgument);
  model.initialize(Shape{1, 6});
  CHECK_THROWS_WITH_AS((inference::Predictor<std::vector<float>, std::vector<float>>(model, nullptr)),
                       doctest::Contains("translator is null"), InvalidArgument);
  inference::Predictor<std::vector<float>, std::vector<float>> predictor(model, std::make_shared<Scores>());
  CHECK_THROWS_AS(predictor.predict(std::vector<float>(5)), InvalidArgument);  // 5 values for shape (1, 6)
  CHECK(predictor.manager().sub_managers().empty());  // the failed call's context closed too
}

}  // namespace ndgc
