// Tests src/ops/gpu_writes.cpp: the engine the table hands out for a GPU
// forwards every call to the registered engine (arguments and results) and
// advances the GPU write epoch after each call but to_host, also when the
// call throws; note_gpu_write advances it for writes outside the engine.
#include <stdexcept>
#include <thread>
#include <string>
#include <vector>

#include "ops/engine.hpp"
#include "ops/gpu_writes.hpp"
#include "ops_test_util.hpp"
#include "sim_gpu.hpp"

using namespace ndgc;
using ops::TensorView;

namespace {

// Records each call's name; the bool calls answer `accepts`; fill throws
// for a value of -1.
class RecordingEngine : public ops::Engine {
 public:
  std::vector<std::string> calls;
  bool accepts = true;

  void fill(const TensorView&, double value) override {
    calls.push_back("fill");
    if (value == -1) throw std::runtime_error("fill failed");
  }
  void arange(const TensorView&, double, double) override { calls.push_back("arange"); }
  void eye(const TensorView&) override { calls.push_back("eye"); }
  void random_uniform(const TensorView&, double, double, const ops::RandomDraw&) override {
    calls.push_back("random_uniform");
  }
  void random_normal(const TensorView&, double, double, const ops::RandomDraw&) override {
    calls.push_back("random_normal");
  }
  void set_draw_state(const TensorView&, std::uint64_t, std::uint64_t) override { calls.push_back("set_draw_state"); }
  void copy(const TensorView&, const TensorView&) override { calls.push_back("copy"); }
  void unary(ops::Unary, const TensorView&, const TensorView&) override { calls.push_back("unary"); }
  void binary(ops::Binary, const TensorView&, const TensorView&, const TensorView&) override {
    calls.push_back("binary");
  }
  void binary_scalar(ops::Binary, const TensorView&, double, bool, const TensorView&) override {
    calls.push_back("binary_scalar");
  }
  void where(const TensorView&, const TensorView&, const TensorView&, const TensorView&) override {
    calls.push_back("where");
  }
  bool relu_backward(const TensorView&, const TensorView&, const TensorView&) override {
    calls.push_back("relu_backward");
    return accepts;
  }
  void reduce(ops::Reduce, const TensorView&, std::uint32_t, const TensorView&) override {
    calls.push_back("reduce");
  }
  void arg_reduce(bool, const TensorView&, int, const TensorView&) override { calls.push_back("arg_reduce"); }
  void matmul(const TensorView&, const TensorView&, const TensorView&) override { calls.push_back("matmul"); }
  bool matmul_add(const TensorView&, const TensorView&, const TensorView&) override {
    calls.push_back("matmul_add");
    return accepts;
  }
  bool has_matmul_add(const TensorView&, const TensorView&, const TensorView&) const override { return accepts; }
  void softmax(const TensorView&, int, bool, const TensorView&) override { calls.push_back("softmax"); }
  bool sparse_softmax_cross_entropy(const TensorView&, const TensorView&, const TensorView&) override {
    calls.push_back("sparse_softmax_cross_entropy");
    return accepts;
  }
  bool sparse_softmax_cross_entropy_backward(const TensorView&, const TensorView&, const TensorView&,
                                             const TensorView&) override {
    calls.push_back("sparse_softmax_cross_entropy_backward");
    return accepts;
  }
  void one_hot(const TensorView&, std::int64_t, const TensorView&) override { calls.push_back("one_hot"); }
  void to_host(const TensorView&, const TensorView&) override { calls.push_back("to_host"); }
  void from_host(const TensorView&, const TensorView&) override { calls.push_back("from_host"); }
  bool adam_update(const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                   const ops::AdamHyper&) override {
    calls.push_back("adam_update");
    return accepts;
  }
  bool sgd_update(const TensorView&, const TensorView&, const TensorView&, const ops::SgdHyper&) override {
    calls.push_back("sgd_update");
    return accepts;
  }
};

// The same with the layer kernels (issue 27).
class LayerRecordingEngine : public RecordingEngine {
 public:
  bool has_layer_kernels() const noexcept override { return true; }
  void im2col(const TensorView&, const ops::Window2d&, const TensorView&) override { calls.push_back("im2col"); }
  void col2im(const TensorView&, const ops::Window2d&, const TensorView&) override { calls.push_back("col2im"); }
  void pool2d(bool, const TensorView&, const ops::Window2d&, const TensorView&) override {
    calls.push_back("pool2d");
  }
  void pool2d_backward(bool, const TensorView&, const TensorView&, const ops::Window2d&, const TensorView&) override {
    calls.push_back("pool2d_backward");
  }
  void gelu(const TensorView&, const TensorView&) override { calls.push_back("gelu"); }
  void gelu_backward(const TensorView&, const TensorView&, const TensorView&) override {
    calls.push_back("gelu_backward");
  }
  void dropout(const TensorView&, double, const ops::RandomDraw&, const TensorView&) override {
    calls.push_back("dropout");
  }
  void embedding(const TensorView&, const TensorView&, const TensorView&) override { calls.push_back("embedding"); }
  void embedding_backward(const TensorView&, const TensorView&, const TensorView&) override {
    calls.push_back("embedding_backward");
  }
  void embedding_in_range(const TensorView&, const TensorView&, const TensorView&) override {
    calls.push_back("embedding_in_range");
  }
  void embedding_backward_in_range(const TensorView&, const TensorView&, const TensorView&) override {
    calls.push_back("embedding_backward_in_range");
  }
  void layer_norm(const TensorView&, const TensorView&, const TensorView&, double, const TensorView&) override {
    calls.push_back("layer_norm");
  }
  void layer_norm_backward(const TensorView&, const TensorView&, const TensorView&, double, const TensorView&,
                           const TensorView&, const TensorView&) override {
    calls.push_back("layer_norm_backward");
  }
  void batch_norm_stats(const TensorView&, const TensorView&, const TensorView&) override {
    calls.push_back("batch_norm_stats");
  }
  void batch_norm(const TensorView&, const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                  double, const TensorView&) override {
    calls.push_back("batch_norm");
  }
  void batch_norm_backward(const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                           const TensorView&, double, bool, const TensorView&, const TensorView&,
                           const TensorView&) override {
    calls.push_back("batch_norm_backward");
  }
  void lstm_cell(const TensorView&, const TensorView&, const TensorView&, const TensorView&) override {
    calls.push_back("lstm_cell");
  }
  void lstm_cell_backward(const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                          const TensorView&, const TensorView&, const TensorView&) override {
    calls.push_back("lstm_cell_backward");
  }
  bool conv2d_direct(const TensorView&, const TensorView&, const TensorView*, const ops::Window2d&,
                     const TensorView&) override {
    calls.push_back("conv2d_direct");
    return accepts;
  }
  bool conv2d_backward_data_direct(const TensorView&, const TensorView&, const ops::Window2d&,
                                   const TensorView&) override {
    calls.push_back("conv2d_backward_data_direct");
    return accepts;
  }
  bool conv2d_backward_weight_direct(const TensorView&, const TensorView&, const ops::Window2d&,
                                     const TensorView&) override {
    calls.push_back("conv2d_backward_weight_direct");
    return accepts;
  }
  bool has_conv2d_gradients() const noexcept override { return accepts; }
  bool conv2d_16() const noexcept override { return accepts; }
};

// Every Engine call, each made once on `e`; returns the bool calls' results.
std::vector<bool> call_everything(ops::Engine& e) {
  const TensorView v;
  const ops::AdamHyper adam{};
  const ops::SgdHyper sgd{};
  std::vector<bool> answers;
  e.fill(v, 0);
  e.arange(v, 0, 1);
  e.eye(v);
  e.random_uniform(v, 0, 1, {1, 0});
  e.random_normal(v, 0, 1, {1, 0});
  e.set_draw_state(v, 1, 0);
  e.copy(v, v);
  e.unary(ops::Unary::neg, v, v);
  e.binary(ops::Binary::add, v, v, v);
  e.binary_scalar(ops::Binary::add, v, 1, false, v);
  e.where(v, v, v, v);
  answers.push_back(e.relu_backward(v, v, v));
  e.reduce(ops::Reduce::sum, v, 1, v);
  e.arg_reduce(true, v, 0, v);
  e.matmul(v, v, v);
  answers.push_back(e.matmul_add(v, v, v));
  e.softmax(v, 0, false, v);
  answers.push_back(e.sparse_softmax_cross_entropy(v, v, v));
  answers.push_back(e.sparse_softmax_cross_entropy_backward(v, v, v, v));
  e.one_hot(v, 2, v);
  e.from_host(v, v);
  answers.push_back(e.adam_update(v, v, v, v, adam));
  answers.push_back(e.sgd_update(v, v, v, sgd));
  return answers;
}

// Puts `e` in the table for gpu(0) (the simulated GPU's probe makes it
// usable) and the simulated GPU's engine back when done.
struct Registered {
  test::SimGpu& gpu;
  Registered(test::SimGpu& g, ops::Engine& e) : gpu(g) { ops::register_engine(DeviceType::gpu, &e); }
  ~Registered() { ops::register_engine(DeviceType::gpu, &gpu.engine()); }
};

}  // namespace

TEST_CASE("gpu writes: every engine call but to_host reaches the engine and advances the epoch once") {
  test::SimGpu gpu;
  RecordingEngine recorder;
  Registered registered(gpu, recorder);
  ops::Engine& e = ops::engine(Device::gpu(0));
  REQUIRE(&e != &recorder);  // wrapped

  const std::uint64_t before = ops::gpu_write_epoch();
  const std::vector<bool> answers = call_everything(e);
  CHECK(recorder.calls.size() == 23);
  CHECK(ops::gpu_write_epoch() == before + 23);
  CHECK(answers == std::vector<bool>(6, true));

  recorder.accepts = false;  // "no such kernel" is passed back; the call still counts
  CHECK(call_everything(e) == std::vector<bool>(6, false));
  CHECK(ops::gpu_write_epoch() == before + 46);

  recorder.calls.clear();
  const std::uint64_t reading = ops::gpu_write_epoch();
  e.to_host(TensorView{}, TensorView{});
  CHECK(recorder.calls == std::vector<std::string>{"to_host"});
  CHECK(ops::gpu_write_epoch() == reading);
}

TEST_CASE("gpu writes: has_matmul_add is a question: its answer comes back, and no call or epoch is counted") {
  test::SimGpu gpu;
  RecordingEngine recorder;
  Registered registered(gpu, recorder);
  const ops::Engine& e = ops::engine(Device::gpu(0));
  const TensorView v;
  const std::uint64_t before = ops::gpu_write_epoch();
  CHECK(e.has_matmul_add(v, v, v));
  recorder.accepts = false;
  CHECK_FALSE(e.has_matmul_add(v, v, v));
  CHECK(recorder.calls.empty());
  CHECK(ops::gpu_write_epoch() == before);
}

// linear (src/ops/linalg.cpp) copies its bias into the output only for an
// engine that then accumulates the product onto it; otherwise the product,
// then the bias added, with no copy made in vain.
TEST_CASE("linear asks the engine for matmul_add before it copies the bias") {
  test::SimGpu gpu;
  NDManager m = NDManager::new_base_manager("linear-engine-calls");
  NDArray x = m.ones({4, 3}).to_device(Device::gpu(0)), w = m.ones({3, 2}).to_device(Device::gpu(0)),
          b = m.ones({2}).to_device(Device::gpu(0));
  RecordingEngine recorder;
  Registered registered(gpu, recorder);
  (void)linear(x, w, b);
  CHECK(recorder.calls == std::vector<std::string>{"copy", "matmul_add"});
  recorder.calls.clear();
  recorder.accepts = false;
  (void)linear(x, w, b);
  CHECK(recorder.calls == std::vector<std::string>{"matmul", "binary"});
}

TEST_CASE("gpu writes: a call that throws still advances the epoch") {
  test::SimGpu gpu;
  RecordingEngine recorder;
  Registered registered(gpu, recorder);
  const std::uint64_t before = ops::gpu_write_epoch();
  CHECK_THROWS_WITH_AS(ops::engine(Device::gpu(0)).fill(TensorView{}, -1), "fill failed", std::runtime_error);
  CHECK(ops::gpu_write_epoch() == before + 1);
}

TEST_CASE("gpu writes: note_gpu_write and CountsAsGpuWrite advance the epoch, from any thread") {
  const std::uint64_t before = ops::gpu_write_epoch();
  ops::note_gpu_write();
  CHECK(ops::gpu_write_epoch() == before + 1);
  { ops::CountsAsGpuWrite write; CHECK(ops::gpu_write_epoch() == before + 1); }
  CHECK(ops::gpu_write_epoch() == before + 2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([] {
      for (int i = 0; i < 1000; ++i) ops::note_gpu_write();
    });
  for (std::thread& t : threads) t.join();
  CHECK(ops::gpu_write_epoch() == before + 4002);
}

TEST_CASE("gpu writes: CPU kernels, 16-bit ones included, do not advance the epoch") {
  NDManager m = NDManager::new_base_manager("cpu-epoch");
  const std::uint64_t before = ops::gpu_write_epoch();
  CHECK(m.ones({4}).add(1.0).sum().item<float>() == 8.0f);
  CHECK(m.ones({4}, DataType::bfloat16).add(1.0).sum().item<float>() == 8.0f);
  CHECK(ops::gpu_write_epoch() == before);
}

TEST_CASE("gpu writes: the layer kernels are forwarded too, each advancing the epoch once") {
  test::SimGpu gpu;
  CHECK_FALSE(ops::engine(Device::gpu(0)).has_layer_kernels());  // the simulated GPU has none
  LayerRecordingEngine recorder;
  Registered registered(gpu, recorder);
  ops::Engine& e = ops::engine(Device::gpu(0));
  REQUIRE(&e != &recorder);
  CHECK(e.has_layer_kernels());
  const TensorView v;
  const ops::Window2d w;
  const std::uint64_t before = ops::gpu_write_epoch();
  e.im2col(v, w, v);
  e.col2im(v, w, v);
  e.pool2d(true, v, w, v);
  e.pool2d_backward(false, v, v, w, v);
  e.gelu(v, v);
  e.gelu_backward(v, v, v);
  e.dropout(v, 0.5, {1, 0}, v);
  e.embedding(v, v, v);
  e.embedding_backward(v, v, v);
  e.embedding_in_range(v, v, v);
  e.embedding_backward_in_range(v, v, v);
  e.layer_norm(v, v, v, 1e-5, v);
  e.layer_norm_backward(v, v, v, 1e-5, v, v, v);
  e.batch_norm_stats(v, v, v);
  e.batch_norm(v, v, v, v, v, 1e-5, v);
  e.batch_norm_backward(v, v, v, v, v, 1e-5, true, v, v, v);
  e.lstm_cell(v, v, v, v);
  e.lstm_cell_backward(v, v, v, v, v, v, v);
  CHECK(recorder.calls ==
        std::vector<std::string>{"im2col", "col2im", "pool2d", "pool2d_backward", "gelu", "gelu_backward", "dropout",
                                 "embedding", "embedding_backward", "embedding_in_range",
                                 "embedding_backward_in_range", "layer_norm", "layer_norm_backward",
                                 "batch_norm_stats", "batch_norm", "batch_norm_backward", "lstm_cell",
                                 "lstm_cell_backward"});
  CHECK(ops::gpu_write_epoch() == before + 18);
}

TEST_CASE("gpu writes: an engine's own convolutions are forwarded, each a write; its answers come back") {
  test::SimGpu gpu;
  LayerRecordingEngine recorder;
  Registered registered(gpu, recorder);
  ops::Engine& e = ops::engine(Device::gpu(0));
  const TensorView v;
  const ops::Window2d w;
  for (bool accepts : {true, false}) {
    recorder.accepts = accepts;
    recorder.calls.clear();
    const std::uint64_t before = ops::gpu_write_epoch();
    CHECK(e.has_conv2d_gradients() == accepts);  // questions: no call, no epoch
    CHECK(e.conv2d_16() == accepts);
    CHECK(e.conv2d_direct(v, v, nullptr, w, v) == accepts);
    CHECK(e.conv2d_backward_data_direct(v, v, w, v) == accepts);
    CHECK(e.conv2d_backward_weight_direct(v, v, w, v) == accepts);
    CHECK(recorder.calls == std::vector<std::string>{"conv2d_direct", "conv2d_backward_data_direct",
                                                     "conv2d_backward_weight_direct"});
    CHECK(ops::gpu_write_epoch() == before + 3);
  }
}

namespace {
// Records the dtype of the first view of each unary, pool2d and dropout call,
// and takes 16-bit views itself when `native` (Engine::kernels_16).
class DtypeRecorder final : public LayerRecordingEngine {
 public:
  bool native = true;
  std::vector<DataType> seen;
  bool kernels_16() const noexcept override { return native; }
  void unary(ops::Unary, const TensorView& in, const TensorView&) override { seen.push_back(in.dtype); }
  void pool2d(bool, const TensorView& x, const ops::Window2d&, const TensorView&) override { seen.push_back(x.dtype); }
  void dropout(const TensorView& x, double, const ops::RandomDraw&, const TensorView&) override {
    seen.push_back(x.dtype);
  }
};
}  // namespace

TEST_CASE("16-bit views reach an engine with kernels_16 as they are; an engine without gets them as float32") {
  test::SimGpu gpu;
  DtypeRecorder recorder;
  Registered registered(gpu, recorder);
  ops::Engine& e = ops::engine(Device::gpu(0));
  std::vector<std::uint16_t> bits(6), more(6);
  std::vector<float> wide(6);
  const TensorView v = ops::contiguous_view(bits.data(), DataType::bfloat16, Shape{1, 1, 2, 3});
  const TensorView u = ops::contiguous_view(more.data(), DataType::bfloat16, Shape{1, 1, 2, 3});
  const TensorView f = ops::contiguous_view(wide.data(), DataType::float32, Shape{1, 1, 2, 3});
  const ops::Window2d window;
  auto calls = [&] {
    recorder.seen.clear();
    e.unary(ops::Unary::neg, v, u);
    e.pool2d(true, v, window, u);
    e.dropout(v, 0.5, {1, 0}, u);
    e.unary(ops::Unary::neg, v, f);  // 16 bits in, 32 out: widened either way
    return recorder.seen;
  };
  using T = DataType;
  CHECK(calls() == std::vector<DataType>{T::bfloat16, T::bfloat16, T::bfloat16, T::float32});
  recorder.native = false;
  CHECK(calls() == std::vector<DataType>{T::float32, T::float32, T::float32, T::float32});
}
