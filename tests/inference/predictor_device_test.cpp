// Predictor for a model on a device (issue 14, item 1), on the simulated GPU
// (tests/sim_gpu.hpp): a translator's inputs made in the context are on the
// device; inputs made on the host elsewhere are copied to it, into the
// call's context; the results equal the CPU model's; nothing stays behind on
// the device after many calls.
#include <doctest/doctest.h>

#include <ndgc/inference.hpp>
#include <ndgc/ndgc.hpp>

#include "sim_gpu.hpp"

namespace ndgc {
namespace {

std::unique_ptr<nn::Block> net() { return std::make_unique<nn::Mlp>(6, 3, std::vector<std::int64_t>{8}); }

// The inputs in the context (on the model's device).
struct InContext : inference::Translator<std::vector<float>, std::vector<float>> {
  NDList process_input(const ManagerRef& ctx, const std::vector<float>& in) override {
    return NDList{ctx.create(in, Shape{std::int64_t(in.size() / 6), 6})};
  }
  std::vector<float> process_output(const ManagerRef& ctx, const NDList& out) override {
    CHECK(out.head().manager().same(ctx));
    return out.head().softmax().to_vector<float>();
  }
};

// The inputs in a host manager of its own (which keeps them: the
// translator's business), as a translator written for a CPU model makes them.
struct OnHost : inference::Translator<std::vector<float>, std::vector<float>> {
  NDManager host = NDManager::new_base_manager("translator host");
  Device seen_output = Device::cpu();
  NDList process_input(const ManagerRef&, const std::vector<float>& in) override {
    return NDList{host.create(in, Shape{std::int64_t(in.size() / 6), 6})};
  }
  std::vector<float> process_output(const ManagerRef& ctx, const NDList& out) override {
    seen_output = out.head().device();
    CHECK(out.head().manager().same(ctx));  // the forward pass started from the copy in the context
    return out.head().softmax().to_vector<float>();
  }
};

const std::vector<float> kInput{0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 1.0f, 0.5f, -1.0f, 0.0f, 0.25f, 2.0f};

std::vector<float> on_cpu() {
  set_random_seed(8);
  Model model("m", net());
  model.initialize(Shape{1, 6});
  inference::Predictor<std::vector<float>, std::vector<float>> p(model, std::make_shared<InContext>());
  return p.predict(kInput);
}

}  // namespace

TEST_CASE("a predictor of a model on gpu(0): inputs made in the context or on the host give the CPU's results") {
  const std::vector<float> want = on_cpu();
  test::SimGpu gpu;
  {
    set_random_seed(8);
    Model model("m", net(), Device::gpu(0));
    model.initialize(Shape{1, 6});
    inference::Predictor<std::vector<float>, std::vector<float>> in_context(model, std::make_shared<InContext>());
    auto host_translator = std::make_shared<OnHost>();
    inference::Predictor<std::vector<float>, std::vector<float>> on_host(model, host_translator);
    const std::vector<float> a = in_context.predict(kInput);
    const std::vector<float> b = on_host.predict(kInput);
    REQUIRE(a.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      CHECK(a[i] == doctest::Approx(want[i]));
      CHECK(b[i] == doctest::Approx(want[i]));
    }
    CHECK(host_translator->seen_output == Device::gpu(0));
    const std::uint64_t bytes = gpu.bytes_in_use();
    for (int i = 0; i < 100; ++i) {
      in_context.predict(kInput);
      on_host.predict(kInput);
    }
    CHECK(gpu.bytes_in_use() == bytes);  // every context closed with its call, copies included
  }
  CHECK(gpu.bytes_in_use() == 0);
}

}  // namespace ndgc
