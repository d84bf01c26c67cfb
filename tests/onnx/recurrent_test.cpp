// RNN, GRU and LSTM nodes beyond the conformance cases: sequence_lens of
// different lengths in every direction, against each entry run alone on its
// own steps, and LSTM's peepholes over several steps from a non-zero cell,
// against a direct loop (the conformance case has one step from a zero cell,
// where only the output gate's peephole counts).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <ndgc/ndgc.hpp>
#include <ndgc/onnx.hpp>

#include "graph_builder.hpp"

namespace ndgc {
namespace {

using test::GraphBuilder;

std::vector<float> ramp(std::size_t n, float scale, float shift) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::sin(float(i) * scale + shift) * 0.5f;
  return v;
}

// A one-layer `op` graph over X [T, B, 2] with hidden size 3; sequence_lens
// is a graph input when `with_lengths`.
onnx::Imported recurrent_graph(const test::TempFolder& dir, const std::string& op, const std::string& direction,
                               std::int64_t steps, std::int64_t batch, bool with_lengths) {
  const std::int64_t dirs = direction == "bidirectional" ? 2 : 1, gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  GraphBuilder g(14);
  g.input("x", {steps, batch, 2});
  if (with_lengths) g.input("lengths", {-1}, ::onnx::TensorProto::INT32);  // dynamic: the kernel checks it
  g.output("y", {steps, dirs, batch, 3}).output("y_h", {dirs, batch, 3});
  g.floats("w", {dirs, gates * 3, 2}, ramp(std::size_t(dirs * gates * 6), 0.7f, 0.1f));
  g.floats("r", {dirs, gates * 3, 3}, ramp(std::size_t(dirs * gates * 9), 0.3f, 0.5f));
  g.floats("b", {dirs, gates * 6}, ramp(std::size_t(dirs * gates * 6), 1.1f, 0.2f));
  auto& n = g.node(op, {"x", "w", "r", "b", with_lengths ? "lengths" : ""}, {"y", "y_h"}, "cell");
  GraphBuilder::attr(n, "hidden_size", std::int64_t{3});
  GraphBuilder::attr_s(n, "direction", direction);
  return onnx::load(g.write(dir / (op + direction + std::to_string(with_lengths) + ".onnx")), "recurrent");
}

}  // namespace

TEST_CASE("onnx RNN, GRU and LSTM with sequence_lens: each entry as if run alone on its steps, zeros after") {
  test::TempFolder dir("sequence_lens");
  const std::int64_t steps = 4, batch = 3;
  const std::vector<std::int32_t> lengths{4, 2, 0};
  NDManager m = NDManager::new_base_manager("batch");
  const NDArray x = m.create<float>(ramp(std::size_t(steps * batch * 2), 0.9f, 0.3f), Shape{steps, batch, 2});
  for (const std::string op : {"RNN", "GRU", "LSTM"})
    for (const std::string direction : {"forward", "reverse", "bidirectional"}) {
      CAPTURE(op);
      CAPTURE(direction);
      onnx::Imported masked = recurrent_graph(dir, op, direction, steps, batch, true);
      const NDList out = masked.model.block().forward(NDList{x, m.create<std::int32_t>(lengths, Shape{batch})}, false);
      const std::int64_t dirs = out[1].shape()[0];
      for (std::int64_t b = 0; b < batch; ++b) {
        CAPTURE(b);
        const std::int64_t n = lengths[std::size_t(b)];
        const NDArray y_b = out[0].get(NDIndex().add_all().add_all().add_index(b));    // [T, D, H]
        const NDArray h_b = out[1].get(NDIndex().add_all().add_index(b));              // [D, H]
        for (float v : y_b.get(NDIndex().add_slice(n, steps)).to_vector<float>()) CHECK(v == 0.0f);
        if (n == 0) {  // no step: the initial state, zeros
          for (float v : h_b.to_vector<float>()) CHECK(v == 0.0f);
          continue;
        }
        onnx::Imported alone = recurrent_graph(dir, op, direction, n, 1, false);
        const NDArray x_b = x.get(NDIndex().add_slice(0, n).add_slice(b, b + 1));
        const NDList want = alone.model.block().forward(NDList{x_b}, false);
        const auto got_y = y_b.get(NDIndex().add_slice(0, n)).to_vector<float>();
        const auto want_y = want[0].reshape(Shape{n, dirs, 3}).to_vector<float>();
        REQUIRE(got_y.size() == want_y.size());
        for (std::size_t i = 0; i < got_y.size(); ++i) CHECK(got_y[i] == doctest::Approx(want_y[i]).epsilon(1e-6));
        const auto got_h = h_b.to_vector<float>(), want_h = want[1].reshape(Shape{dirs, 3}).to_vector<float>();
        for (std::size_t i = 0; i < got_h.size(); ++i) CHECK(got_h[i] == doctest::Approx(want_h[i]).epsilon(1e-6));
      }
    }
}

TEST_CASE("onnx RNN: a sequence length past the steps is an error naming the node") {
  test::TempFolder dir("long_lengths");
  onnx::Imported net = recurrent_graph(dir, "RNN", "forward", 2, 2, true);
  NDManager m = NDManager::new_base_manager("batch");
  const NDArray x = m.zeros(Shape{2, 2, 2});
  CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{x, m.create<std::int32_t>({1, 3}, Shape{2})}, false),
                       doctest::Contains("RNN 'cell': a sequence length of 3 is outside [0, 2]"), InvalidArgument);
}

TEST_CASE("onnx LSTM with peepholes: three steps from a non-zero cell against a direct loop") {
  const std::int64_t steps = 3, hidden = 2;
  const std::vector<float> xs{0.5f, -1.0f, 0.25f}, w = ramp(8, 0.7f, 0.1f), r = ramp(16, 0.3f, 0.5f);
  const std::vector<float> p{0.3f, -0.2f, 0.5f, 0.4f, -0.6f, 0.7f}, c0{0.8f, -0.5f}, h0{0.1f, 0.2f};
  test::TempFolder dir("peepholes");
  GraphBuilder g(14);
  g.input("x", {steps, 1, 1}).output("y_h", {1, 1, hidden}).output("y_c", {1, 1, hidden});
  g.floats("w", {1, 4 * hidden, 1}, w).floats("r", {1, 4 * hidden, hidden}, r).floats("p", {1, 3 * hidden}, p);
  g.floats("h0", {1, 1, hidden}, h0).floats("c0", {1, 1, hidden}, c0);
  auto& n = g.node("LSTM", {"x", "w", "r", "", "", "h0", "c0", "p"}, {"", "y_h", "y_c"}, "peephole");
  GraphBuilder::attr(n, "hidden_size", hidden);
  onnx::Imported net = onnx::load(g.write(dir / "peephole.onnx"), "peephole");
  NDManager m = NDManager::new_base_manager("batch");
  const NDList out = net.model.block().forward(NDList{m.create<float>(xs, Shape{steps, 1, 1})}, false);

  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  std::vector<double> h(h0.begin(), h0.end()), c(c0.begin(), c0.end());
  for (std::int64_t t = 0; t < steps; ++t) {
    std::vector<double> pre(4 * hidden);  // gates i, o, f, c
    for (std::int64_t j = 0; j < 4 * hidden; ++j) {
      pre[std::size_t(j)] = w[std::size_t(j)] * xs[std::size_t(t)];
      for (std::int64_t k = 0; k < hidden; ++k) pre[std::size_t(j)] += r[std::size_t(j * hidden + k)] * h[std::size_t(k)];
    }
    for (std::int64_t k = 0; k < hidden; ++k) {
      const auto u = std::size_t(k), H = std::size_t(hidden);
      const double i = sigmoid(pre[u] + p[u] * c[u]), f = sigmoid(pre[2 * H + u] + p[2 * H + u] * c[u]);
      c[u] = f * c[u] + i * std::tanh(pre[3 * H + u]);
      h[u] = sigmoid(pre[H + u] + p[H + u] * c[u]) * std::tanh(c[u]);
    }
  }
  const auto got_h = out[0].to_vector<float>(), got_c = out[1].to_vector<float>();
  for (std::size_t k = 0; k < std::size_t(hidden); ++k) {
    CHECK(got_h[k] == doctest::Approx(h[k]).epsilon(1e-5));
    CHECK(got_c[k] == doctest::Approx(c[k]).epsilon(1e-5));
  }
}

TEST_CASE("onnx RNN, GRU and LSTM with their activations attribute and clip, against direct loops") {
  // One entry, input size 1, hidden size 2, three steps, no biases, a zero
  // initial state; W [gates·2, 1], R [gates·2, 2].
  const std::int64_t steps = 3, hidden = 2;
  const std::vector<float> xs{0.9f, -1.7f, 0.6f};
  auto hard_sigmoid = [](double v) { return std::clamp(0.3 * v + 0.4, 0.0, 1.0); };
  auto softsign = [](double v) { return v / (1 + std::abs(v)); };
  auto affine = [](double v) { return 0.5 * v + 0.1; };
  auto leaky = [](double v) { return v < 0 ? 0.2 * v : v; };
  const double clip = 0.7;
  auto clipped = [&](double v) { return std::clamp(v, -clip, clip); };
  struct Case {
    std::string op;
    std::vector<std::string> activations;
    std::vector<float> alphas, betas;
  };
  for (const Case& k : {Case{"RNN", {"LeakyRelu"}, {0.2f}, {}},
                        Case{"GRU", {"HardSigmoid", "Softsign"}, {0.3f}, {0.4f}},
                        Case{"LSTM", {"hardsigmoid", "Softsign", "Affine"}, {0.3f, 0.5f}, {0.4f, 0.1f}},
                        Case{"LSTM coupled", {"hardsigmoid", "Softsign", "Affine"}, {0.3f, 0.5f}, {0.4f, 0.1f}}}) {
    const bool coupled = k.op == "LSTM coupled";  // input_forget 1: f = 1 - i
    const std::string op = coupled ? "LSTM" : k.op;
    CAPTURE(k.op);
    const std::int64_t gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
    const std::vector<float> w = ramp(std::size_t(gates * hidden), 0.7f, 0.1f);
    const std::vector<float> r = ramp(std::size_t(gates * hidden * hidden), 0.3f, 0.5f);
    test::TempFolder dir("activations");
    GraphBuilder g(14);
    g.input("x", {steps, 1, 1}).output("y_h", {1, 1, hidden});
    g.floats("w", {1, gates * hidden, 1}, w).floats("r", {1, gates * hidden, hidden}, r);
    auto& n = g.node(op, {"x", "w", "r"}, {"", "y_h"}, "cell");
    GraphBuilder::attr(n, "hidden_size", hidden);
    if (coupled) GraphBuilder::attr(n, "input_forget", std::int64_t{1});
    auto* a = n.add_attribute();
    a->set_name("activations");
    a->set_type(::onnx::AttributeProto::STRINGS);
    for (const auto& name : k.activations) a->add_strings(name);
    for (const auto& [attr, values] : {std::pair{"activation_alpha", k.alphas}, std::pair{"activation_beta", k.betas}}) {
      if (values.empty()) continue;
      auto* f = n.add_attribute();
      f->set_name(attr);
      f->set_type(::onnx::AttributeProto::FLOATS);
      for (float v : values) f->add_floats(v);
    }
    GraphBuilder::attr_f(n, "clip", float(clip));
    onnx::Imported net = onnx::load(g.write(dir / "cell.onnx"), "cell");
    NDManager m = NDManager::new_base_manager("batch");
    const NDList out = net.model.block().forward(NDList{m.create<float>(xs, Shape{steps, 1, 1})}, false);

    std::vector<double> h(2, 0.0), c(2, 0.0);
    auto pre = [&](std::int64_t gate, std::int64_t u, double x, const std::vector<double>& state) {
      const std::int64_t row = gate * hidden + u;
      double v = w[std::size_t(row)] * x;
      for (std::int64_t j = 0; j < hidden; ++j) v += r[std::size_t(row * hidden + j)] * state[std::size_t(j)];
      return v;
    };
    for (std::int64_t t = 0; t < steps; ++t) {
      const double x = xs[std::size_t(t)];
      std::vector<double> next(2);
      if (op == "RNN") {
        for (std::int64_t u = 0; u < hidden; ++u) next[std::size_t(u)] = leaky(clipped(pre(0, u, x, h)));
      } else if (op == "GRU") {  // gates z, r, h
        std::vector<double> reset_h(2);
        for (std::int64_t u = 0; u < hidden; ++u)
          reset_h[std::size_t(u)] = hard_sigmoid(clipped(pre(1, u, x, h))) * h[std::size_t(u)];
        for (std::int64_t u = 0; u < hidden; ++u) {
          const double z = hard_sigmoid(clipped(pre(0, u, x, h)));
          const double candidate = softsign(clipped(pre(2, u, x, reset_h)));
          next[std::size_t(u)] = (1 - z) * candidate + z * h[std::size_t(u)];
        }
      } else {  // gates i, o, f, c
        for (std::int64_t u = 0; u < hidden; ++u) {
          const double i = hard_sigmoid(clipped(pre(0, u, x, h)));
          const double f = coupled ? 1 - i : hard_sigmoid(clipped(pre(2, u, x, h)));
          const double o = hard_sigmoid(clipped(pre(1, u, x, h)));
          c[std::size_t(u)] = f * c[std::size_t(u)] + i * softsign(clipped(pre(3, u, x, h)));
          next[std::size_t(u)] = o * affine(c[std::size_t(u)]);
        }
      }
      h = next;
    }
    const auto got = out[0].to_vector<float>();
    for (std::size_t u = 0; u < 2; ++u) CHECK(got[u] == doctest::Approx(h[u]).epsilon(1e-5));
  }
}

TEST_CASE("onnx RNN: an activation ONNX does not define, the wrong number of them, or a clip that is not positive "
          "are refused at load, naming the node") {
  test::TempFolder dir("bad_activation");
  auto rnn = [&](std::vector<std::string> activations, float clip) {
    GraphBuilder g(14);
    g.input("x", {2, 1, 1}).output("y_h", {1, 1, 2});
    g.floats("w", {1, 2, 1}, {1, 1}).floats("r", {1, 2, 2}, {0, 0, 0, 0});
    auto& n = g.node("RNN", {"x", "w", "r"}, {"", "y_h"}, "cell");
    GraphBuilder::attr(n, "hidden_size", std::int64_t{2});
    if (clip != 0) GraphBuilder::attr_f(n, "clip", clip);
    auto* a = n.add_attribute();
    a->set_name("activations");
    a->set_type(::onnx::AttributeProto::STRINGS);
    for (const auto& name : activations) a->add_strings(name);
    return g.write(dir / "rnn.onnx");
  };
  CHECK_THROWS_WITH_AS(onnx::load(rnn({"Swish"}, 0), "swish"),
                       doctest::Contains("RNN 'cell': activation 'Swish' is not one ONNX's RNNs define"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(onnx::load(rnn({"Tanh", "Relu"}, 0), "two"),
                       doctest::Contains("RNN 'cell': 2 activations where its direction 'forward' takes 1"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(onnx::load(rnn({"Tanh"}, -1), "clip"), doctest::Contains("RNN 'cell': clip must be positive"),
                       InvalidArgument);
}

TEST_CASE("onnx RNN: sequence_lens of another length than the batch is an error naming the node") {
  test::TempFolder dir("lens_count");
  onnx::Imported net = recurrent_graph(dir, "RNN", "forward", 2, 2, true);
  NDManager m = NDManager::new_base_manager("batch");
  CHECK_THROWS_WITH_AS(net.model.block().forward(NDList{m.zeros(Shape{2, 2, 2}), m.create<std::int32_t>({1, 2, 2},
                                                                                                        Shape{3})},
                                                 false),
                       doctest::Contains("RNN 'cell': sequence_lens has 3 entries for a batch of 2"), ShapeMismatch);
}

}  // namespace ndgc
