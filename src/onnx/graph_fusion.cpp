// Note [Fused layer norms]
// Before opset 17 ONNX has no LayerNormalization, so PyTorch exports
// nn.LayerNorm as nine nodes over the last axis:
//
//   m = ReduceMean(x)          d = Sub(x, m)        p = Pow(d, 2)
//   v = ReduceMean(p)          e = Add(v, ε)        s = Sqrt(e)
//   n = Div(d, s)              a = Mul(n, γ)        y = Add(a, β)
//
// Run as written, that is nine passes over x's size, nine recorded ops and
// eight intermediates for a backward pass to keep. The planner finds the
// chain (each intermediate read only inside it and no graph output, the
// reductions over the last axis only with keepdims, the exponent 2 and ε
// float32 or float64 scalars of Constant nodes, which never train (so a
// 16-bit chain, whose ε is 16-bit, keeps its own ops), γ and β of one axis)
// and puts one LayerNormalization step in its place, ndgc's layer_norm: one
// pass, one recorded op, its own gradient. The result is the same maths, rounded in
// another order (within ONNX's tolerances: the conformance cases and the
// TransformerEncoder's outputs and gradients against PyTorch's check it).
// ONNX Runtime fuses the same chain (its LayerNormFusion).
//
// Note [Fused projections]
// A linear layer over a sequence, x [T, N, d] × W [d, e] + b [e], has no
// ONNX op of its own (Gemm takes matrices only), so exporters write it as
// MatMul then Add: two passes over the output and two recorded ops. Where
// the MatMul's result is read by that Add alone, W has rank 2 and b is one
// axis of W's width, one step runs ndgc's linear instead (Note [Fused
// linear] in ops/linalg.cpp): the bias written first and the product
// accumulated onto it, one op with its own gradient. linear composes
// matmul and add itself where its fused path does not serve (a vector x,
// rows that do not stack), so the step computes what the two nodes did,
// rounded in another order where it fuses. x's rank need not be known at
// load: shape inference often loses it behind a dynamic Reshape. ONNX
// Runtime fuses the same pair (its MatMulAddFusion).
#include <cstring>

#include "onnx/graph_block.hpp"
#include "onnx/tensors.hpp"
#include "support/assert.hpp"

namespace ndgc::onnx::detail {
namespace {

// The one element of `t`, stored as T in its typed field or its raw bytes.
template <class T, class Field>
std::optional<double> only_element(const ::onnx::TensorProto& t, const Field& typed) {
  if (typed.size() == 1) return double(typed.Get(0));
  if (t.raw_data().size() != sizeof(T)) return std::nullopt;
  T v;
  std::memcpy(&v, t.raw_data().data(), sizeof v);
  return double(v);
}

// A scalar floating constant's value, if `name` is one.
std::optional<double> constant_scalar(const Constants& constants, const std::string& name) {
  auto it = constants.find(name);
  if (it == constants.end()) return std::nullopt;
  const ::onnx::TensorProto& t = *it->second;
  if (checked_element_count({t.dims().data(), std::size_t(t.dims().size())}) != 1 ||
      (t.has_data_location() && t.data_location() == ::onnx::TensorProto::EXTERNAL))
    return std::nullopt;
  if (t.data_type() == ::onnx::TensorProto::FLOAT) return only_element<float>(t, t.float_data());
  if (t.data_type() == ::onnx::TensorProto::DOUBLE) return only_element<double>(t, t.double_data());
  return std::nullopt;
}

// The dimensions of `name`, when inference found them (-1: unknown).
const std::vector<std::int64_t>* dims_of(const std::unordered_map<std::string, TypeInfo>& types,
                                         const std::string& name) {
  auto it = types.find(name);
  return it == types.end() || !it->second.dims ? nullptr : &*it->second.dims;
}

// The rank of `name`, when inference found it.
std::optional<std::size_t> rank_of(const std::unordered_map<std::string, TypeInfo>& types, const std::string& name) {
  const std::vector<std::int64_t>* dims = dims_of(types, name);
  return dims ? std::optional<std::size_t>(dims->size()) : std::nullopt;
}

}  // namespace

// Who makes and who reads each value of the planned steps, and the chains a
// pass replaces by one step each; apply() rebuilds the steps.
class GraphBlock::Fusion {
 public:
  explicit Fusion(GraphBlock& graph) : graph_(graph), removed_(graph.steps_.size(), false) {
    const std::vector<Step>& steps = graph.steps_;
    for (std::size_t k = 0; k < steps.size(); ++k) {
      for (const auto& out : steps[k].node.proto().output()) producer_[out] = k;
      for (const auto& in : steps[k].node.proto().input()) ++readers_[in];
      for (const Subgraph& sub : steps[k].subgraphs)  // a subgraph's reads count too
        for (std::size_t i : sub.captured) ++readers_[graph.slot_names_[std::size_t(steps[k].inputs[i])]];
    }
    for (const auto& v : graph.model_.graph().output()) readers_[v.name()] += 2;  // never an intermediate
  }

  // The step making `value` if it is `op_type`, read `uses` times, not yet fused; else null.
  const Step* made_by(const std::string& value, const char* op_type, std::size_t uses) {
    auto it = producer_.find(value);
    if (it == producer_.end() || readers_[value] != uses || removed_[it->second]) return nullptr;
    const Step& s = graph_.steps_[it->second];
    return s.node.op_type() == op_type && s.subgraphs.empty() ? &s : nullptr;
  }
  // The step making `value`, if one does.
  const Step* producer(const std::string& value) const {
    auto it = producer_.find(value);
    return it == producer_.end() ? nullptr : &graph_.steps_[it->second];
  }
  static const std::string& in(const Step* s, int k) { return s->node.proto().input(k); }

  // A node for `op_type` in the graph's keeping, named after `last`, writing last's output.
  ::onnx::NodeProto& node(const char* op_type, const Step& last, const char* suffix) {
    ::onnx::NodeProto& node = graph_.fused_nodes_.emplace_back();
    node.set_op_type(op_type);
    const std::string& name = last.node.proto().name();
    node.set_name(name.empty() ? suffix : name + "/" + suffix);
    node.add_output(last.node.proto().output(0));
    return node;
  }
  // One step running `kernel` on `node` in place of `chain`, whose last step is `last`.
  void replace(std::initializer_list<const Step*> chain, const Step& last, const Kernel* kernel,
               const ::onnx::NodeProto& node) {
    const std::size_t k = std::size_t(&last - graph_.steps_.data());
    Node fused_node(node);
    fused_node.set_index(int(k));
    Step step{kernel, fused_node, {}, {graph_.slot(node.output(0))}, {}, {}, {}};
    for (const auto& name : node.input()) step.inputs.push_back(graph_.slot(name));
    for (const Step* s : chain) removed_[std::size_t(s - graph_.steps_.data())] = true;
    NDGC_ASSERT(fused_.empty() || fused_.back().first < k, "Fusion::replace: chains out of step order");
    fused_.emplace_back(k, std::move(step));
  }
  bool removed(const Step& s) const { return removed_[std::size_t(&s - graph_.steps_.data())]; }

  // The steps with each chain replaced, at the place of its last step.
  void apply() {
    if (fused_.empty()) return;
    std::vector<Step> kept;
    std::size_t next = 0;
    for (std::size_t k = 0; k < graph_.steps_.size(); ++k) {
      if (next < fused_.size() && fused_[next].first == k) kept.push_back(std::move(fused_[next++].second));
      else if (!removed_[k]) kept.push_back(std::move(graph_.steps_[k]));
    }
    graph_.steps_ = std::move(kept);
  }

 private:
  GraphBlock& graph_;
  std::unordered_map<std::string, std::size_t> producer_, readers_;
  std::vector<bool> removed_;
  std::vector<std::pair<std::size_t, Step>> fused_;  // by the index of the chain's last step, ascending
};

void GraphBlock::fuse(const std::unordered_map<std::string, TypeInfo>& types, const Constants& constants) {
  fuse_layer_norms(types, constants);
  fuse_projections(types);
}

void GraphBlock::fuse_layer_norms(const std::unordered_map<std::string, TypeInfo>& types,
                                  const Constants& constants) {
  Fusion f(*this);
  auto in = &Fusion::in;
  // A Constant node's scalar: never a parameter (an initializer may train, and fusing would drop its gradient).
  auto fixed_scalar = [&](const std::string& value) -> std::optional<double> {
    const Step* s = f.producer(value);
    if (!s || s->node.op_type() != "Constant") return std::nullopt;
    return constant_scalar(constants, value);
  };
  auto last_axis_mean = [&](const Step* s, std::optional<std::size_t> rank) {
    const std::vector<std::int64_t> axes = s->node.ints("axes");
    return s->node.i("keepdims", 1) == 1 && axes.size() == 1 && s->node.input_count() == 1 &&
           (axes[0] == -1 || (rank && axes[0] == std::int64_t(*rank) - 1));
  };
  for (const Step& add : steps_) {
    if (add.node.op_type() != "Add" || add.node.input_count() != 2) continue;
    for (int a_at = 0; a_at < 2 && !f.removed(add); ++a_at) {
      const Step* mul = f.made_by(in(&add, a_at), "Mul", 1);
      if (!mul) continue;
      const std::string& beta = in(&add, 1 - a_at);
      for (int n_at = 0; n_at < 2; ++n_at) {
        const Step* div = f.made_by(in(mul, n_at), "Div", 1);
        if (!div) continue;
        const std::string& gamma = in(mul, 1 - n_at);
        const Step* sqrt = f.made_by(in(div, 1), "Sqrt", 1);
        const Step* sub = f.made_by(in(div, 0), "Sub", 2);
        if (!sqrt || !sub) continue;
        const Step* eps_add = f.made_by(in(sqrt, 0), "Add", 1);
        if (!eps_add) continue;
        const int v_at = fixed_scalar(in(eps_add, 1)) ? 0 : 1;
        const std::optional<double> eps = fixed_scalar(in(eps_add, 1 - v_at));
        const Step* var = f.made_by(in(eps_add, v_at), "ReduceMean", 1);
        if (!eps || !var) continue;
        const Step* pow = f.made_by(in(var, 0), "Pow", 1);
        const Step* mean = f.made_by(in(sub, 1), "ReduceMean", 1);
        if (!pow || !mean || in(pow, 0) != in(div, 0) || fixed_scalar(in(pow, 1)) != 2.0) continue;
        const std::string& x = in(sub, 0);
        if (in(mean, 0) != x) continue;
        // γ and β of one axis: Mul and Add broadcast them over the last axis
        // as layer_norm does (a length that fits neither is an error both ways).
        const std::optional<std::size_t> rank = rank_of(types, x);
        if (rank_of(types, gamma) != 1u || rank_of(types, beta) != 1u || !last_axis_mean(mean, rank) ||
            !last_axis_mean(var, rank))
          continue;
        ::onnx::NodeProto& node = f.node("LayerNormalization", add, "layer_norm");
        for (const std::string* name : {&x, &gamma, &beta}) node.add_input(*name);
        auto* axis = node.add_attribute();
        axis->set_name("axis"), axis->set_type(::onnx::AttributeProto::INT), axis->set_i(-1);
        auto* epsilon = node.add_attribute();
        epsilon->set_name("epsilon"), epsilon->set_type(::onnx::AttributeProto::FLOAT), epsilon->set_f(float(*eps));
        f.replace({mean, sub, pow, var, eps_add, sqrt, div, mul, &add}, add, find_kernel("LayerNormalization"), node);
        break;
      }
    }
  }
  f.apply();
}

void GraphBlock::fuse_projections(const std::unordered_map<std::string, TypeInfo>& types) {
  Fusion f(*this);
  for (const Step& add : steps_) {
    if (add.node.op_type() != "Add" || add.node.input_count() != 2) continue;
    for (int m_at = 0; m_at < 2 && !f.removed(add); ++m_at) {
      const Step* matmul = f.made_by(Fusion::in(&add, m_at), "MatMul", 1);
      if (!matmul) continue;
      const std::string &x = Fusion::in(matmul, 0), &w = Fusion::in(matmul, 1), &b = Fusion::in(&add, 1 - m_at);
      // x of any rank: linear composes matmul and add for a vector, as the two nodes do.
      const std::vector<std::int64_t>*wd = dims_of(types, w), *bd = dims_of(types, b);
      if (!wd || !bd || wd->size() != 2 || bd->size() != 1 || (*wd)[1] < 0 || (*bd)[0] != (*wd)[1]) continue;
      ::onnx::NodeProto& node = f.node(kMatMulAdd, add, "linear");
      for (const std::string* name : {&x, &w, &b}) node.add_input(*name);
      f.replace({matmul, &add}, add, &matmul_add_kernel(), node);
    }
  }
  f.apply();
}

}  // namespace ndgc::onnx::detail
