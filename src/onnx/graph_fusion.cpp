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
#include <cstring>

#include "onnx/graph_block.hpp"
#include "onnx/tensors.hpp"

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

// The rank of `name`, when inference found it.
std::optional<std::size_t> rank_of(const std::unordered_map<std::string, TypeInfo>& types, const std::string& name) {
  auto it = types.find(name);
  if (it == types.end() || !it->second.dims) return std::nullopt;
  return it->second.dims->size();
}

}  // namespace

void GraphBlock::fuse_layer_norms(const std::unordered_map<std::string, TypeInfo>& types,
                                  const Constants& constants) {
  std::unordered_map<std::string, std::size_t> producer, readers;
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    for (const auto& out : steps_[k].node.proto().output()) producer[out] = k;
    for (const auto& in : steps_[k].node.proto().input()) ++readers[in];
    for (const Subgraph& sub : steps_[k].subgraphs)  // a subgraph's reads count too
      for (std::size_t i : sub.captured) ++readers[slot_names_[std::size_t(steps_[k].inputs[i])]];
  }
  for (const auto& v : model_.graph().output()) readers[v.name()] += 2;  // never an intermediate
  // The step making `value` if it is `op_type`, read `uses` times; else null.
  auto made_by = [&](const std::string& value, const char* op_type, std::size_t uses) -> const Step* {
    auto it = producer.find(value);
    if (it == producer.end() || readers[value] != uses) return nullptr;
    const Step& s = steps_[it->second];
    return s.node.op_type() == op_type && s.subgraphs.empty() ? &s : nullptr;
  };
  auto in = [](const Step* s, int k) -> const std::string& { return s->node.proto().input(k); };
  // A Constant node's scalar: never a parameter (an initializer may train, and fusing would drop its gradient).
  auto fixed_scalar = [&](const std::string& value) -> std::optional<double> {
    auto it = producer.find(value);
    if (it == producer.end() || steps_[it->second].node.op_type() != "Constant") return std::nullopt;
    return constant_scalar(constants, value);
  };
  auto last_axis_mean = [&](const Step* s, std::optional<std::size_t> rank) {
    const std::vector<std::int64_t> axes = s->node.ints("axes");
    return s->node.i("keepdims", 1) == 1 && axes.size() == 1 && s->node.input_count() == 1 &&
           (axes[0] == -1 || (rank && axes[0] == std::int64_t(*rank) - 1));
  };
  std::vector<bool> removed(steps_.size(), false);
  std::vector<std::pair<std::size_t, Step>> fused;  // by the index of the chain's last step
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    const Step& add = steps_[k];
    if (add.node.op_type() != "Add" || add.node.input_count() != 2) continue;
    for (int a_at = 0; a_at < 2; ++a_at) {
      const Step* mul = made_by(in(&add, a_at), "Mul", 1);
      if (!mul) continue;
      const std::string& beta = in(&add, 1 - a_at);
      for (int n_at = 0; n_at < 2; ++n_at) {
        const Step* div = made_by(in(mul, n_at), "Div", 1);
        if (!div) continue;
        const std::string& gamma = in(mul, 1 - n_at);
        const Step* sqrt = made_by(in(div, 1), "Sqrt", 1);
        const Step* sub = made_by(in(div, 0), "Sub", 2);
        if (!sqrt || !sub) continue;
        const Step* eps_add = made_by(in(sqrt, 0), "Add", 1);
        if (!eps_add) continue;
        const int v_at = fixed_scalar(in(eps_add, 1)) ? 0 : 1;
        const std::optional<double> eps = fixed_scalar(in(eps_add, 1 - v_at));
        const Step* var = made_by(in(eps_add, v_at), "ReduceMean", 1);
        if (!eps || !var) continue;
        const Step* pow = made_by(in(var, 0), "Pow", 1);
        const Step* mean = made_by(in(sub, 1), "ReduceMean", 1);
        if (!pow || !mean || in(pow, 0) != in(div, 0) || fixed_scalar(in(pow, 1)) != 2.0) continue;
        const std::string& x = in(sub, 0);
        if (in(mean, 0) != x) continue;
        // γ and β of one axis: Mul and Add broadcast them over the last axis
        // as layer_norm does (a length that fits neither is an error both ways).
        const std::optional<std::size_t> rank = rank_of(types, x);
        if (rank_of(types, gamma) != 1u || rank_of(types, beta) != 1u || !last_axis_mean(mean, rank) ||
            !last_axis_mean(var, rank))
          continue;
        ::onnx::NodeProto& node = fused_nodes_.emplace_back();
        node.set_op_type("LayerNormalization");
        node.set_name(add.node.proto().name().empty() ? "layer_norm" : add.node.proto().name() + "/layer_norm");
        for (const std::string* name : {&x, &gamma, &beta}) node.add_input(*name);
        node.add_output(add.node.proto().output(0));
        auto* axis = node.add_attribute();
        axis->set_name("axis"), axis->set_type(::onnx::AttributeProto::INT), axis->set_i(-1);
        auto* epsilon = node.add_attribute();
        epsilon->set_name("epsilon"), epsilon->set_type(::onnx::AttributeProto::FLOAT), epsilon->set_f(float(*eps));
        Node fused_node(node);
        fused_node.set_index(int(k));
        Step step{find_kernel("LayerNormalization"), fused_node, {slot(x), slot(gamma), slot(beta)},
                  {slot(add.node.proto().output(0))}, {}, {}, {}};
        for (const Step* s : {mean, sub, pow, var, eps_add, sqrt, div, mul, &add})
          removed[std::size_t(s - steps_.data())] = true;
        fused.emplace_back(k, std::move(step));
        break;
      }
      if (removed[k]) break;
    }
  }
  if (fused.empty()) return;
  std::vector<Step> kept;
  std::size_t next = 0;
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    if (next < fused.size() && fused[next].first == k) kept.push_back(std::move(fused[next++].second));
    else if (!removed[k]) kept.push_back(std::move(steps_[k]));
  }
  steps_ = std::move(kept);
}

}  // namespace ndgc::onnx::detail
