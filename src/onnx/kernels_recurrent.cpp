// RNN, GRU and LSTM as ONNX defines them, composed step by step of ndgc's
// matmul, sigmoid, tanh and element-wise ops, so they record on the tape and
// run on any device. Per direction, the input projection of every step is
// one product; each step adds one [B, H] x [H, gates·H] product.
//
// Layout 0: X [T, B, I] → Y [T, D, B, H]; layout 1: X [B, T, I] → Y [B, T, D, H].
// W [D, G·H, I], R [D, G·H, H], B [D, 2·G·H] (input then recurrence biases),
// initial_h [D, B, H] (layout 1: [B, D, H]), LSTM's initial_c likewise.
// Gates: RNN one, GRU z, r, h, LSTM i, o, f, c. LSTM's peepholes P [D, 3·H]
// (i, o, f) add P_i ⊙ c_{t-1} to i's and P_f ⊙ c_{t-1} to f's pre-activations,
// and P_o ⊙ c_t to o's.
//
// `activations` (f, g, h per direction, any of ONNX's eleven, with
// activation_alpha and activation_beta consumed in order) replace sigmoid
// and tanh; `clip` bounds every activation's input to [-clip, clip]; LSTM's
// `input_forget` couples the gates, f = 1 - i.
//
// sequence_lens [B]: entry b runs its first len_b steps. A step past them
// leaves b's state as it was and writes zeros to Y, so Y_h is b's state after
// its last step; a reverse direction, which walks from T - 1 down, starts b
// from the initial state at step len_b - 1, as ONNX (and cuDNN) define it.
#include <algorithm>
#include <cctype>
#include <cstring>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "onnx/kernel_support.hpp"
#include "support/assert.hpp"

namespace ndgc::onnx::detail {
namespace {

enum class Cell { rnn, gru, lstm };

int gates(Cell cell) { return cell == Cell::rnn ? 1 : cell == Cell::gru ? 3 : 4; }

// Columns [k·H, (k+1)·H) of a [B, n·H] array.
NDArray block(const NDArray& a, std::int64_t k, std::int64_t h) {
  NDIndex index;
  index.add_all().add_slice(k * h, (k + 1) * h);
  return a.get(index);
}

// Element d of axis 0.
NDArray pick(const NDArray& a, std::int64_t d) { return a.get(NDIndex().add_index(d)); }

// The functions an RNN's `activations` attribute may name.
enum class Function {
  relu, tanh, sigmoid, affine, leaky_relu, thresholded_relu, scaled_tanh, hard_sigmoid, elu, softsign, softplus
};

// ONNX's names for them (case as the spec writes them), with whether each
// takes alpha and beta and their defaults (those of the op of that name).
struct ActivationSpec {
  const char* name;
  Function function;
  bool alpha, beta;
  double default_alpha, default_beta;
};
constexpr ActivationSpec kActivations[] = {
    {"Relu", Function::relu, false, false, 0, 0},
    {"Tanh", Function::tanh, false, false, 0, 0},
    {"Sigmoid", Function::sigmoid, false, false, 0, 0},
    {"Affine", Function::affine, true, true, 1.0, 0.0},
    {"LeakyRelu", Function::leaky_relu, true, false, 0.01, 0},
    {"ThresholdedRelu", Function::thresholded_relu, true, false, 1.0, 0},
    {"ScaledTanh", Function::scaled_tanh, true, true, 1.0, 1.0},
    {"HardSigmoid", Function::hard_sigmoid, true, true, 0.2, 0.5},
    {"Elu", Function::elu, true, false, 1.0, 0},
    {"Softsign", Function::softsign, false, false, 0, 0},
    {"Softplus", Function::softplus, false, false, 0, 0}};

// One activation of a cell, with its alpha and beta.
struct Activation {
  Function function = Function::tanh;
  double alpha = 0, beta = 0;

  NDArray operator()(const NDArray& x) const {
    switch (function) {
      case Function::relu: return x.relu();
      case Function::tanh: return x.tanh();
      case Function::sigmoid: return x.sigmoid();
      case Function::affine: return x.mul(alpha).add(beta);
      case Function::leaky_relu: return where(x.lt(0.0), x.mul(alpha), x);
      case Function::thresholded_relu: return where(x.gt(alpha), x, x.mul(0.0));
      case Function::scaled_tanh: return x.mul(beta).tanh().mul(alpha);
      case Function::hard_sigmoid: return x.mul(alpha).add(beta).maximum(0.0).minimum(1.0);
      case Function::elu: return where(x.gt(0.0), x, x.exp().sub(1.0).mul(alpha));
      case Function::softsign: return x.div(x.abs().add(1.0));
      case Function::softplus: return x.exp().add(1.0).log();
    }
    NDGC_ASSERT(false, "every Function has a case");
    return x;
  }
};

// By name, in any case (as ONNX Runtime reads them).
const ActivationSpec* activation_spec(const std::string& name) {
  for (const ActivationSpec& a : kActivations)
    if (std::equal(name.begin(), name.end(), a.name, a.name + std::strlen(a.name),
                   [](char x, char y) { return std::tolower(static_cast<unsigned char>(x)) == std::tolower(y); }))
      return &a;
  return nullptr;
}

// The cell's activations, `per_direction` of them for each direction (RNN
// f; GRU f, g; LSTM f, g, h), from the attribute (its count checked at load)
// or the defaults; alphas and betas are consumed in order by the functions
// that take them.
std::vector<Activation> activations_of(const Node& node, int per_direction, std::int64_t directions) {
  std::vector<std::string> names;
  if (const auto* a = node.find("activations"))
    for (const auto& n : a->strings()) names.push_back(n);
  if (names.empty()) {
    const std::vector<std::string> defaults =
        per_direction == 1 ? std::vector<std::string>{"Tanh"}
        : per_direction == 2 ? std::vector<std::string>{"Sigmoid", "Tanh"}
                             : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (std::int64_t d = 0; d < directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  const std::vector<float> alphas = node.floats("activation_alpha"), betas = node.floats("activation_beta");
  std::size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> out;
  for (const std::string& name : names) {
    const ActivationSpec* spec = activation_spec(name);
    NDGC_ASSERT(spec, "the check admits only ONNX's RNN activations");
    Activation a{spec->function, spec->default_alpha, spec->default_beta};
    if (spec->alpha && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (spec->beta && next_beta < betas.size()) a.beta = betas[next_beta++];
    out.push_back(a);
  }
  return out;
}

// f (RNN); f, g (GRU); f, g, h (LSTM).
int activations_per_direction(const std::string& op_type) { return op_type == "RNN" ? 1 : op_type == "GRU" ? 2 : 3; }

struct Direction {
  NDArray w, r, wb, rb;  // [G·H, I], [G·H, H], [G·H] each (biases may be empty)
  NDArray p_i, p_o, p_f;  // LSTM's peepholes, [H] each (empty without P)
  NDArray h, c;          // [B, H]
  Activation f{Function::sigmoid}, g, h_act;  // RNN: f only; g and h tanh by default
  double clip = 0;                                    // > 0: pre-activations clipped to [-clip, clip]
  bool input_forget = false;                          // LSTM: the forget gate is 1 - the input gate

  NDArray clipped(const NDArray& x) const { return clip > 0 ? x.maximum(-clip).minimum(clip) : x; }
};

// One step of `cell`: x_proj [B, G·H] is x_t W^T + Wb. Updates d.h (and d.c).
void step(Cell cell, Direction& d, const NDArray& x_proj, std::int64_t hidden, bool linear_before_reset) {
  const NDArray rt = d.r.transpose();
  if (cell == Cell::rnn) {
    NDArray pre = x_proj.add(d.h.matmul(rt));
    if (d.rb.defined()) pre = pre.add(d.rb);
    d.h = d.f(d.clipped(pre));
    return;
  }
  if (cell == Cell::lstm) {
    NDArray g = x_proj.add(d.h.matmul(rt));
    if (d.rb.defined()) g = g.add(d.rb);
    NDArray i_pre = block(g, 0, hidden), o_pre = block(g, 1, hidden), f_pre = block(g, 2, hidden);
    if (d.p_i.defined()) i_pre = i_pre.add(d.p_i.mul(d.c)), f_pre = f_pre.add(d.p_f.mul(d.c));
    const NDArray i = d.f(d.clipped(i_pre)), f = d.input_forget ? i.rsub(1.0) : d.f(d.clipped(f_pre));
    const NDArray candidate = d.g(d.clipped(block(g, 3, hidden)));
    d.c = f.mul(d.c).add(i.mul(candidate));
    if (d.p_o.defined()) o_pre = o_pre.add(d.p_o.mul(d.c));
    d.h = d.f(d.clipped(o_pre)).mul(d.h_act(d.c));
    return;
  }
  // GRU: z and r from both products; the candidate per linear_before_reset.
  const NDArray r_h = block(rt, 2, hidden);  // the candidate's rows of R, transposed: [H, H]
  NDArray hr = d.h.matmul(rt);  // [B, 3H]
  if (d.rb.defined()) hr = hr.add(d.rb);
  // 1 - z as sigmoid(-a) for the default f: where z rounds to 1, 1 - z
  // would be 0 and lose the ~1e-7 that the state keeps.
  const NDArray z_pre = d.clipped(block(x_proj, 0, hidden).add(block(hr, 0, hidden)));
  const NDArray z = d.f(z_pre), keep = d.f.function == Function::sigmoid ? z_pre.neg().sigmoid() : z.rsub(1.0);
  const NDArray reset = d.f(d.clipped(block(x_proj, 1, hidden).add(block(hr, 1, hidden))));
  NDArray candidate;
  if (linear_before_reset) {
    candidate = d.g(d.clipped(block(x_proj, 2, hidden).add(reset.mul(block(hr, 2, hidden)))));
  } else {
    NDArray rh = reset.mul(d.h).matmul(r_h);
    if (d.rb.defined()) rh = rh.add(block(d.rb.reshape(Shape{1, -1}), 2, hidden));
    candidate = d.g(d.clipped(block(x_proj, 2, hidden).add(rh)));
  }
  d.h = keep.mul(candidate).add(z.mul(d.h));
}

// sequence_lens as a mask [T, B, 1] of which entries step at t; empty when
// every entry runs all T steps.
NDArray step_mask(const RunContext& c, std::int64_t steps, std::int64_t batch) {
  if (!c.has(4)) return {};
  const std::vector<std::int64_t> lengths = c.ints(4);
  if (std::int64_t(lengths.size()) != batch)
    throw ShapeMismatch(fmt::format("onnx: {}: sequence_lens has {} entries for a batch of {}", c.node.label(),
                                    lengths.size(), batch));
  bool all_full = true;
  for (std::int64_t n : lengths) {
    if (n < 0 || n > steps)
      throw InvalidArgument(fmt::format("onnx: {}: a sequence length of {} is outside [0, {}]", c.node.label(), n,
                                        steps));
    all_full = all_full && n == steps;
  }
  if (all_full) return {};
  std::vector<std::int64_t> mask;
  mask.reserve(std::size_t(steps * batch));
  for (std::int64_t t = 0; t < steps; ++t)
    for (std::int64_t n : lengths) mask.push_back(t < n ? 1 : 0);
  return make_ints(c, mask, Shape{steps, batch, 1}).gt(0.0);
}

template <Cell C>
void run_recurrent(RunContext& c) {
  const bool batch_first = c.node.i("layout", 0) != 0;
  NDArray x = batch_first ? c.in(0).swap_axes(0, 1) : c.in(0);  // [T, B, I]
  const NDArray& w = c.in(1);
  const NDArray& r = c.in(2);
  const std::int64_t dirs = w.shape()[0], hidden = r.shape()[2], steps = x.shape()[0], batch = x.shape()[1];
  const std::int64_t g = gates(C) * hidden;
  const std::string direction = c.node.s("direction", "forward");
  if (c.node.i("hidden_size", hidden) != hidden || r.shape()[1] != g || w.shape()[1] != g)
    throw ShapeMismatch(fmt::format("onnx: {}: W {} and R {} do not hold {} gates of hidden_size {}", c.node.label(),
                                    w.shape().to_string(), r.shape().to_string(), gates(C), hidden));
  const bool linear_before_reset = c.node.i("linear_before_reset", 0) != 0;
  const NDArray mask = step_mask(c, steps, batch);
  const int per_direction = activations_per_direction(c.node.op_type());
  const std::vector<Activation> acts = activations_of(c.node, per_direction, dirs);
  if (std::int64_t(acts.size()) != per_direction * dirs)  // W's directions against the attribute's
    throw ShapeMismatch(fmt::format("onnx: {}: W holds {} directions; the activations are for {}", c.node.label(),
                                    dirs, acts.size() / std::size_t(per_direction)));
  NDList ys, hs, cs;
  for (std::int64_t k = 0; k < dirs; ++k) {
    Direction d;
    d.w = pick(w, k), d.r = pick(r, k);
    const auto* first = &acts[std::size_t(k * per_direction)];
    d.f = first[0];
    if (per_direction > 1) d.g = first[1];
    if (per_direction > 2) d.h_act = first[2];
    d.clip = c.node.has("clip") ? double(c.node.f("clip", 0.0f)) : 0.0;
    d.input_forget = c.node.i("input_forget", 0) != 0;
    if (c.has(3)) {
      NDArray b = pick(c.in(3), k).reshape(Shape{1, 2 * g});
      d.wb = block(b, 0, g), d.rb = block(b, 1, g);
    }
    auto state = [&](std::size_t input) {
      if (!c.has(input)) return c.manager.zeros(Shape{batch, hidden}, x.dtype());
      return batch_first ? pick(c.in(input).swap_axes(0, 1), k) : pick(c.in(input), k);
    };
    d.h = state(5);
    if (C == Cell::lstm) d.c = state(6);
    if (C == Cell::lstm && c.has(7)) {
      const NDArray p = pick(c.in(7), k).reshape(Shape{1, 3 * hidden});
      d.p_i = block(p, 0, hidden), d.p_o = block(p, 1, hidden), d.p_f = block(p, 2, hidden);
    }
    NDArray proj = x.matmul(d.w.transpose());  // [T, B, G·H]
    if (d.wb.defined()) proj = proj.add(d.wb);
    const bool reverse = direction == "reverse" || (direction == "bidirectional" && k == 1);
    std::vector<NDArray> out(static_cast<std::size_t>(steps));
    for (std::int64_t s = 0; s < steps; ++s) {
      const std::int64_t t = reverse ? steps - 1 - s : s;
      const Direction before = d;
      step(C, d, pick(proj, t), hidden, linear_before_reset);
      if (!mask.defined()) {
        out[std::size_t(t)] = d.h;
        continue;
      }
      const NDArray stepping = pick(mask, t);  // [B, 1]
      out[std::size_t(t)] = where(stepping, d.h, c.manager.zeros(Shape{1, 1}, x.dtype()));
      d.h = where(stepping, d.h, before.h);
      if (C == Cell::lstm) d.c = where(stepping, d.c, before.c);
    }
    ys.push_back(stack(NDList(out), 0));  // [T, B, H]
    hs.push_back(d.h);
    if (C == Cell::lstm) cs.push_back(d.c);
  }
  NDArray y = stack(ys, 1);  // [T, D, B, H]
  NDArray h = stack(hs, 0), cell = C == Cell::lstm ? stack(cs, 0) : NDArray{};
  if (batch_first) {
    y = y.permute({2, 0, 1, 3});  // [B, T, D, H]
    h = h.swap_axes(0, 1);
    if (cell.defined()) cell = cell.swap_axes(0, 1);
  }
  c.outputs.push_back(y);
  c.outputs.push_back(h);
  if (C == Cell::lstm) c.outputs.push_back(cell);
}

std::string recurrent_check(const CheckContext& c) {
  if (std::string why = floats_only(c); !why.empty()) return why;
  const std::string direction = c.node.s("direction", "forward");
  if (const auto* a = c.node.find("activations")) {
    for (const auto& name : a->strings())
      if (!activation_spec(name)) return fmt::format("activation '{}' is not one ONNX's RNNs define", name);
    const int want = activations_per_direction(c.node.op_type()) * (direction == "bidirectional" ? 2 : 1);
    if (a->strings_size() != want)
      return fmt::format("{} activations where its direction '{}' takes {}", a->strings_size(), direction, want);
  }
  if (c.node.has("clip") && !(c.node.f("clip", 0.0f) > 0.0f)) return "clip must be positive";
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return fmt::format("direction '{}' is not an ONNX value", direction);
  return "";
}

}  // namespace

void add_recurrent_kernels(KernelTable& t) {
  t.add("RNN", {run_recurrent<Cell::rnn>, recurrent_check, 2});
  t.add("GRU", {run_recurrent<Cell::gru>, recurrent_check, 2});
  t.add("LSTM", {run_recurrent<Cell::lstm>, recurrent_check, 3});
}

}  // namespace ndgc::onnx::detail
