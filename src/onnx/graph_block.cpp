// See graph_block.hpp.
#include "onnx/graph_block.hpp"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "onnx/tensors.hpp"
#include "support/assert.hpp"

namespace ndgc::onnx::detail {

namespace {

constexpr std::int64_t kMaxOpset = 17;

TypeInfo type_info(const ::onnx::TypeProto& type) {
  TypeInfo info;
  if (!type.has_tensor_type()) return info;
  info.elem = type.tensor_type().elem_type();
  if (type.tensor_type().has_shape()) {
    std::vector<std::int64_t> dims;
    for (const auto& d : type.tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    info.dims = std::move(dims);
  }
  return info;
}

std::unordered_map<std::string, TypeInfo> types_of(const ::onnx::GraphProto& g) {
  std::unordered_map<std::string, TypeInfo> types;
  for (const auto& v : g.input()) types[v.name()] = type_info(v.type());
  for (const auto& v : g.value_info()) types[v.name()] = type_info(v.type());
  for (const auto& v : g.output()) types[v.name()] = type_info(v.type());
  for (const auto& t : g.initializer())
    types[t.name()] = {t.data_type(), std::vector<std::int64_t>(t.dims().begin(), t.dims().end())};
  return types;
}

std::int64_t default_opset(const ::onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 0;
}

ValueInfo value_info(const ::onnx::ValueInfoProto& v, const std::string& label) {
  const TypeInfo t = type_info(v.type());
  const auto dtype = dtype_of_elem(t.elem);
  if (!dtype)
    throw InvalidArgument(fmt::format("onnx::load: {}: graph value '{}' is {}, which ndgc does not run", label,
                                      v.name(), v.type().has_tensor_type() ? elem_name(t.elem) : "not a tensor"));
  return {v.name(), *dtype, t.dims.value_or(std::vector<std::int64_t>{})};
}

}  // namespace

// ---- planning ---------------------------------------------------------------------

GraphBlock::GraphBlock(::onnx::ModelProto model, std::string label) : model_(std::move(model)), label_(std::move(label)) {
  opset_ = default_opset(model_);
  plan_values();
  plan_steps();
}

int GraphBlock::slot(const std::string& name) const {
  auto it = slot_of_.find(name);
  return it == slot_of_.end() ? -1 : it->second;
}

void GraphBlock::plan_values() {
  const auto& g = model_.graph();
  auto add_slot = [&](const std::string& name) {
    if (slot_of_.count(name))
      throw DataError(fmt::format("onnx::load: {}: value '{}' is defined twice", label_, name));
    slot_of_[name] = int(slot_names_.size());
    slot_names_.push_back(name);
  };
  for (const auto& t : g.initializer()) add_slot(t.name());
  for (const auto& v : g.input()) {
    if (slot_of_.count(v.name())) continue;  // IR < 4 lists initializers as inputs too
    add_slot(v.name());
    input_slots_.push_back(slot(v.name()));
    inputs_.push_back(value_info(v, label_));
    rank_known_.push_back(type_info(v.type()).dims.has_value());
  }
  for (const auto& n : g.node())
    for (const auto& out : n.output())
      if (!out.empty()) add_slot(out);
  for (const auto& v : g.output()) {
    if (slot(v.name()) < 0)
      throw DataError(fmt::format("onnx::load: {}: graph output '{}' is computed by no node", label_, v.name()));
    output_slots_.push_back(slot(v.name()));
    outputs_.push_back(value_info(v, label_));
  }
}

namespace {

// Why the node cannot run here, before its kernel's own check: domain,
// opset, op type, outputs and dtypes.
std::string general_problem(const Node& node, const Kernel* kernel, std::int64_t opset,
                            const std::unordered_map<std::string, TypeInfo>& types) {
  const auto& p = node.proto();
  if (!p.domain().empty() && p.domain() != "ai.onnx")
    return fmt::format("domain '{}' is not supported; ndgc runs the default domain", p.domain());
  if (opset > kMaxOpset) return fmt::format("opset {} is past the {} that ndgc runs", opset, kMaxOpset);
  if (!kernel) return "ndgc has no kernel for this op type";
  if (opset < kernel->min_opset)
    return fmt::format("opset {} is before the {} from which ndgc runs {}", opset, kernel->min_opset, node.op_type());
  for (std::size_t k = kernel->max_outputs; k < node.output_count(); ++k)
    if (node.output_wanted(k)) return fmt::format("its output {} ('{}') is not supported", k, p.output(int(k)));
  auto check_dtype = [&](const std::string& name) -> std::string {
    auto it = types.find(name);
    if (name.empty() || it == types.end() || it->second.elem == 0 || dtype_of_elem(it->second.elem)) return "";
    return fmt::format("value '{}' is {}, which ndgc has no dtype for", name, elem_name(it->second.elem));
  };
  for (const auto& name : p.input())
    if (std::string why = check_dtype(name); !why.empty()) return why;
  for (const auto& name : p.output())
    if (std::string why = check_dtype(name); !why.empty()) return why;
  return "";
}

}  // namespace

namespace {

// What the check of a node reading `name` learns of that input at load.
void describe_input(CheckContext& check, const std::string& name,
                    const std::unordered_map<std::string, TypeInfo>& types, const Constants& constants) {
  auto t = types.find(name);
  const bool typed = t != types.end();
  check.input_dtypes.push_back(typed ? dtype_of_elem(t->second.elem) : std::nullopt);
  check.input_shapes.push_back(typed ? t->second.dims : std::nullopt);
  auto c = constants.find(name);
  check.constant_inputs.push_back(c == constants.end() ? nullptr : c->second);
}

// Note [Subgraphs read the outer scope]
// If's branches and Loop's and Scan's bodies are graphs that may read any
// value of the graphs around them. Each is planned as a GraphBlock of its
// own: its graph inputs are its formal ones (none for If; the iteration,
// the condition and the carried values for Loop; the states and the scanned
// slices for Scan) followed by the outer values it reads, typed as shape
// inference typed them outside. Those outer values become extra inputs of
// the node's step, so the enclosing pass keeps them alive until the node
// has run, and a node inside reading a value two scopes out finds it as an
// input of its own enclosing block. A subgraph's nodes are checked when its
// block is planned, so a node there that ndgc cannot run refuses the graph
// at load like any other.

// The names a graph reads that it does not define, its subgraphs' included,
// in the order of first reading.
std::vector<std::string> free_names(const ::onnx::GraphProto& g) {
  std::unordered_set<std::string> local;
  for (const auto& v : g.input()) local.insert(v.name());
  for (const auto& t : g.initializer()) local.insert(t.name());
  for (const auto& n : g.node()) local.insert(n.output().begin(), n.output().end());
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  auto read = [&](const std::string& name) {
    if (!name.empty() && !local.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (const auto& n : g.node()) {
    for (const auto& name : n.input()) read(name);
    for (const auto& a : n.attribute())
      if (a.type() == ::onnx::AttributeProto::GRAPH)
        for (const auto& name : free_names(a.g())) read(name);
  }
  return out;
}

// A graph input `name` typed as `t`.
void add_typed_input(::onnx::GraphProto& g, const std::string& name, const TypeInfo& t) {
  auto* v = g.add_input();
  v->set_name(name);
  auto* tensor = v->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(t.elem);
  if (!t.dims) return;
  auto* shape = tensor->mutable_shape();
  for (std::int64_t d : *t.dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
  }
}

}  // namespace

std::vector<const char*> subgraph_attributes(const std::string& op_type) {
  if (op_type == "If") return {"then_branch", "else_branch"};
  if (op_type == "Loop" || op_type == "Scan") return {"body"};
  return {};
}

std::string GraphBlock::plan_subgraphs(Step& step, const std::unordered_map<std::string, TypeInfo>& types,
                                       const std::vector<bool>& defined) {
  for (const char* attribute : subgraph_attributes(step.node.op_type())) {
    const ::onnx::AttributeProto* a = step.node.find(attribute);
    if (!a || a->type() != ::onnx::AttributeProto::GRAPH)
      return fmt::format("its attribute {} is missing or not a graph", attribute);
    if (a->g().initializer_size() > 0)
      return fmt::format("subgraph {} has initializers, which ndgc does not run inside a subgraph", attribute);
    ::onnx::ModelProto sub;
    sub.set_ir_version(model_.ir_version());
    *sub.mutable_opset_import() = model_.opset_import();
    *sub.mutable_graph() = a->g();
    Subgraph entry;
    for (const std::string& name : free_names(a->g())) {
      const int s = slot(name);
      if (s < 0 || !defined[std::size_t(s)])
        throw DataError(fmt::format("onnx::load: {}: subgraph {} of {} reads '{}', which no earlier value around it "
                                    "holds",
                                    label_, attribute, step.node.label(), name));
      auto t = types.find(name);
      if (t == types.end() || !dtype_of_elem(t->second.elem))
        return fmt::format("subgraph {} reads '{}', whose dtype shape inference did not find", attribute, name);
      add_typed_input(*sub.mutable_graph(), name, t->second);
      entry.captured.push_back(step.inputs.size());
      step.inputs.push_back(s);
    }
    try {
      step.owned.push_back(std::make_unique<GraphBlock>(std::move(sub), fmt::format("{}/{}", label_, attribute)));
    } catch (const InvalidArgument& e) {
      return fmt::format("subgraph {}: {}", attribute, e.what());
    }
    entry.block = step.owned.back().get();
    entry.outputs = entry.block->graph_outputs();
    step.subgraphs.push_back(std::move(entry));
  }
  return "";
}

void GraphBlock::plan_static_shapes(const std::unordered_map<std::string, TypeInfo>& types) {
  static_shapes_.assign(slot_names_.size(), std::nullopt);
  for (const auto& [name, t] : types) {
    const int s = slot(name);
    if (s < 0 || !t.dims || t.dims->size() > std::size_t(kMaxRank)) continue;
    if (std::all_of(t.dims->begin(), t.dims->end(), [](std::int64_t d) { return d >= 0; }))
      static_shapes_[std::size_t(s)] = Shape(*t.dims);
  }
}

void GraphBlock::plan_steps() {
  const auto& g = model_.graph();
  const auto types = types_of(g);
  plan_static_shapes(types);
  Constants constants;
  std::vector<bool> defined(slot_names_.size(), false);
  for (const auto& t : g.initializer()) constants[t.name()] = &t, defined[std::size_t(slot(t.name()))] = true;
  for (int s : input_slots_) defined[std::size_t(s)] = true;
  std::vector<std::string> refused;
  for (int index = 0; index < g.node_size(); ++index) {
    Node node(g.node(index));
    node.set_index(index);
    Step step{find_kernel(node.op_type()), node, {}, {}, {}, {}, {}};
    CheckContext check{node, opset_, {}, {}, {}};
    for (const auto& name : node.proto().input()) {
      const int s = name.empty() ? -1 : slot(name);
      if (!name.empty() && (s < 0 || !defined[std::size_t(s)]))
        throw DataError(fmt::format("onnx::load: {}: node {} reads '{}' before any node computes it: the graph is "
                                    "not in topological order, or has a cycle",
                                    label_, node.label(), name));
      step.inputs.push_back(s);
      describe_input(check, name, types, constants);
    }
    for (const auto& name : node.proto().output()) {
      step.outputs.push_back(name.empty() ? -1 : slot(name));
      if (!name.empty()) defined[std::size_t(slot(name))] = true;
    }
    if (const auto* t = node.op_type() == "Constant" ? node.t("value") : nullptr) constants[node.proto().output(0)] = t;
    std::string why = general_problem(node, step.kernel, opset_, types);
    if (why.empty() && step.kernel->check) why = step.kernel->check(check);
    if (why.empty()) why = plan_subgraphs(step, types, defined);
    if (!why.empty()) refused.push_back(fmt::format("  {}: {}", node.label(), why));
    else step.shapes = is_shape_arithmetic(step, types);
    steps_.push_back(std::move(step));
  }
  if (!refused.empty())
    throw InvalidArgument(fmt::format("onnx::load: {}: {} node(s) this build cannot run (opset {}):\n{}", label_,
                                      refused.size(), opset_, fmt::join(refused, "\n")));
  fuse(types, constants);
}

// ---- materializing ------------------------------------------------------------------

namespace {

// The initializers a BatchNormalization reads as running statistics (inputs 3, 4).
std::vector<bool> running_statistics(const ::onnx::GraphProto& g) {
  std::unordered_map<std::string, int> index;
  for (int k = 0; k < g.initializer_size(); ++k) index[g.initializer(k).name()] = k;
  std::vector<bool> running(std::size_t(g.initializer_size()), false);
  for (const auto& n : g.node())
    if (n.op_type() == "BatchNormalization")
      for (int k = 3; k < std::min(5, n.input_size()); ++k)
        if (auto it = index.find(n.input(k)); it != index.end()) running[std::size_t(it->second)] = true;
  return running;
}

void clear_data(::onnx::TensorProto& t) {
  t.clear_raw_data();
  t.clear_float_data();
  t.clear_double_data();
  t.clear_int32_data();
  t.clear_int64_data();
}

}  // namespace

void GraphBlock::materialize(const ManagerRef& manager, bool trainable) {
  NDGC_ASSERT(params_.empty(), "materialize runs once");
  manager_ = manager;
  constants_.assign(slot_names_.size(), NDArray{});
  foldable_.assign(slot_names_.size(), false);
  auto& g = *model_.mutable_graph();
  const std::vector<bool> running = running_statistics(g);
  for (int k = 0; k < g.initializer_size(); ++k) {
    const auto& t = g.initializer(k);
    NDArray array = to_array(t, manager, label_);
    array.set_name(t.name());
    const bool trains = trainable && is_floating(array.dtype()) && !running[std::size_t(k)];
    const auto kind = !trains ? nn::Parameter::Kind::running
                              : array.rank() >= 2 ? nn::Parameter::Kind::weight : nn::Parameter::Kind::bias;
    nn::Parameter& p = add_parameter(t.name(), kind);
    p.set_array(array);
    params_.push_back(&p);
    const int s = slot(t.name());
    constants_[std::size_t(s)] = array;
    foldable_[std::size_t(s)] = !trains && !running[std::size_t(k)];
  }
  for (Step& step : steps_)
    for (auto& sub : step.owned) sub->materialize(manager, false);
  fold_constants();
  plan_releases();
  mirror_integer_constants();
  for (auto& t : *g.mutable_initializer()) clear_data(t);
}

// Note [Folding at load]
// A node whose inputs are all constants (initializers that do not train,
// Constant nodes, and the results of nodes folded before it) computes the
// same value on every call: it is run once here, in the model's manager,
// and its outputs become constants named after their graph values. This is
// what turns a Shape → Gather → Concat → Reshape chain over a constant into
// one constant shape. Nodes whose result depends on the mode (Dropout,
// BatchNormalization) are never folded. A folded value that no remaining
// node reads is closed again.
void GraphBlock::fold_constants() {
  std::vector<Step> kept;
  for (Step& step : steps_) {
    // Shape and Size read only the shape: a shape the graph fixes folds, whatever the values.
    const bool shape_only = step.kernel->reads_shape_only;
    auto known = [&](int s) {
      return s < 0 || foldable_[std::size_t(s)] || (shape_only && static_shapes_[std::size_t(s)].has_value());
    };
    if (step.kernel->uses_mode || !step.subgraphs.empty() ||
        !std::all_of(step.inputs.begin(), step.inputs.end(), known)) {
      kept.push_back(std::move(step));
      continue;
    }
    std::vector<NDArray> args;
    NDList stand_ins;  // closed once the node has run
    for (int s : step.inputs) {
      if (s >= 0 && !foldable_[std::size_t(s)]) {  // a stand-in of the right shape: one element, broadcast
        NDArray zero = manager_.zeros(Shape{});
        stand_ins.push_back(zero);
        stand_ins.push_back(zero.broadcast_to(*static_shapes_[std::size_t(s)]));
        args.push_back(stand_ins[stand_ins.size() - 1]);
      } else
        args.push_back(s < 0 ? NDArray{} : constants_[std::size_t(s)]);
    }
    RunContext run{step.node, opset_, args, manager_, false, {}};
    try {
      step.kernel->run(run);
    } catch (const OutOfMemory&) {
      throw;
    } catch (const InvalidArgument&) {
      throw;
    } catch (const Error& e) {  // constants that do not fit together: the graph is wrong
      throw InvalidArgument(fmt::format("onnx::load: {}: folding {} failed: {}", label_, step.node.label(), e.what()));
    }
    for (std::size_t k = 0; k < step.outputs.size(); ++k) {
      const int s = step.outputs[k];
      if (s < 0) continue;
      if (k >= run.outputs.size())
        throw InvalidArgument(fmt::format("onnx::load: {}: {} gave {} outputs, the graph wants {}", label_,
                                          step.node.label(), run.outputs.size(), step.outputs.size()));
      NDArray value = run.outputs[k];
      if (!value.manager().same(manager_)) value = manager_.ret(value);
      constants_[std::size_t(s)] = value;
      foldable_[std::size_t(s)] = true;
    }
    stand_ins.close();
  }
  steps_ = std::move(kept);
  // Close the folded values nothing reads any more (never a parameter's array).
  std::vector<bool> used(slot_names_.size(), false);
  for (const Step& step : steps_)
    for (int s : step.inputs)
      if (s >= 0) used[std::size_t(s)] = true;
  for (int s : output_slots_) used[std::size_t(s)] = true;
  // A slot aliases a parameter when it holds a parameter's own array (Identity of an initializer).
  std::vector<bool> parameter(slot_names_.size(), false);
  for (std::size_t s = 0; s < constants_.size(); ++s)
    for (const auto* p : params_) parameter[s] = parameter[s] || constants_[s].same(p->array());
  auto read_elsewhere = [&](std::size_t s) {  // another live slot holds the same array (Identity)
    for (std::size_t t = 0; t < constants_.size(); ++t)
      if (t != s && (used[t] || parameter[t]) && constants_[t].same(constants_[s])) return true;
    return false;
  };
  for (std::size_t s = 0; s < constants_.size(); ++s)
    if (constants_[s].defined() && !used[s] && !parameter[s]) {
      if (!read_elsewhere(s)) constants_[s].close();
      constants_[s] = NDArray{};
    }
  for (std::size_t s = 0; s < constants_.size(); ++s)
    if (constants_[s].defined() && !parameter[s] && !read_elsewhere(s)) constants_[s].set_name(slot_names_[s]);
}

// Note [An intermediate dies at its last use]
// Each step lists the slots whose last reader it is; forward drops those
// handles as soon as the step has run. With auto-close on, an array nothing
// else holds is then closed at the next library call; with it off, the
// array stays in the batch's manager until that closes, but the slot no
// longer pins it for the rest of the pass. Values nobody reads (an output
// the graph ignores) die right after the step that makes them.
void GraphBlock::plan_releases() {
  std::vector<int> last(slot_names_.size(), -1);
  for (int k = 0; k < int(steps_.size()); ++k) {
    for (int s : steps_[std::size_t(k)].inputs)
      if (s >= 0) last[std::size_t(s)] = k;
    for (int s : steps_[std::size_t(k)].outputs)
      if (s >= 0 && last[std::size_t(s)] < k) last[std::size_t(s)] = k;
  }
  std::vector<bool> kept(slot_names_.size(), false);
  for (int s : output_slots_) kept[std::size_t(s)] = true;
  for (std::size_t s = 0; s < slot_names_.size(); ++s)
    if (constants_[s].defined()) kept[s] = true;
  for (std::size_t s = 0; s < last.size(); ++s)
    if (last[s] >= 0 && !kept[s]) steps_[std::size_t(last[s])].release.push_back(int(s));
}

// ---- running ------------------------------------------------------------------------

void GraphBlock::check_inputs(const NDList& inputs) const {
  if (inputs.size() != inputs_.size()) {
    std::vector<std::string> names;
    for (const auto& v : inputs_) names.push_back(v.name);
    throw InvalidArgument(fmt::format("onnx graph {}: forward got {} inputs; the graph takes {} ({})", label_,
                                      inputs.size(), inputs_.size(), fmt::join(names, ", ")));
  }
  for (std::size_t k = 0; k < inputs_.size(); ++k) {
    const ValueInfo& want = inputs_[k];
    const NDArray& x = inputs[k];
    if (x.dtype() != want.dtype)
      throw DTypeMismatch(fmt::format("onnx graph {}: input '{}' is {}; the graph wants {}", label_, want.name,
                                      to_string(x.dtype()), to_string(want.dtype)));
    if (!rank_known_[k]) continue;
    bool fits = x.rank() == int(want.shape.size());
    for (int a = 0; fits && a < x.rank(); ++a) fits = want.shape[std::size_t(a)] < 0 || want.shape[std::size_t(a)] == x.shape()[a];
    if (!fits)
      throw ShapeMismatch(fmt::format("onnx graph {}: input '{}' has shape {}; the graph wants [{}] (-1: any)", label_,
                                      want.name, x.shape().to_string(), fmt::join(want.shape, ", ")));
  }
}

// Note [A pass leaves the model's manager alone]
// nn::Block's rule: forward creates nothing in the parameters' manager. A
// graph breaks it easily: Gemm(x, W) with transB transposes W, a view whose
// manager is W's; Sub(W, x) puts its result in W's. Left there, each step
// would add arrays to the model's manager until it closes (ndgc-train's
// leak report showed +4,376 arrays an epoch before this). So the kernels
// never see a constant itself, only a view of it made in the batch's
// manager; the view is recorded, so gradients still reach the parameter.
NDList GraphBlock::forward(const NDList& inputs, bool training) {
  check_inputs(inputs);
  const ManagerRef manager = inputs.empty() ? manager_ : inputs[0].manager();
  const Device device = inputs.empty() ? manager_.device() : inputs[0].device();
  std::vector<NDArray> values(constants_);
  for (std::size_t k = 0; k < input_slots_.size(); ++k) values[std::size_t(input_slots_[k])] = inputs[k];
  HostSide host(*this, manager, device);  // Note [Shape arithmetic on the host]
  std::vector<NDArray> args, host_args;
  for (const Step& step : steps_) {
    const bool on_host = host.runs(step);
    // An op's result joins its first input's manager, and a kernel may
    // derive views from any input (Gemm's transposed weight): each constant
    // is seen through a view in the batch's manager, so nothing a pass makes
    // joins the model's (Note [A pass leaves the model's manager alone]).
    args.clear();
    host_args.clear();
    for (int s : step.inputs) {
      if (s < 0) args.emplace_back();
      else if (on_host) args.push_back(host.input(s, values));
      else if (constants_[std::size_t(s)].defined()) args.push_back(values[std::size_t(s)].get(manager, NDIndex()));
      else args.push_back(values[std::size_t(s)]);
      if (host.active()) host_args.push_back(s < 0 || on_host ? NDArray{} : host.values()[std::size_t(s)]);
    }
    RunContext run{step.node,     opset_, args, on_host ? host.manager() : manager, training, {},
                   step.subgraphs, host_args, on_host ? Device::cpu() : device};
    step.kernel->run(run);
    for (std::size_t i = 0; host.active() && !on_host && i < step.inputs.size(); ++i)
      if (const int s = step.inputs[i]; s >= 0 && !values[std::size_t(s)].defined())
        values[std::size_t(s)] = args[i];  // a host value run.in() copied to the device: for later readers too
    for (std::size_t k = 0; k < step.outputs.size(); ++k)
      if (const int s = step.outputs[k]; s >= 0) {
        if (k >= run.outputs.size())
          throw InvalidArgument(fmt::format("onnx graph {}: {} gave {} outputs, the graph wants {}", label_,
                                            step.node.label(), run.outputs.size(), step.outputs.size()));
        if (on_host) host.set(s, run.outputs[k]);
        else values[std::size_t(s)] = run.outputs[k];
      }
    for (int s : step.release) {
      values[std::size_t(s)].reset();
      if (host.active()) host.release(s);
    }
  }
  NDList out;
  for (int s : output_slots_)
    out.push_back(values[std::size_t(s)].defined() || !host.active() ? values[std::size_t(s)] : host.on_device(s));
  return out;
}

Shape GraphBlock::initialize(const ManagerRef&, const Shape& input_shape, DataType) { return output_shape(input_shape); }

Shape GraphBlock::output_shape(const Shape& input_shape) const {
  if (outputs_.empty()) return Shape{};
  std::vector<std::int64_t> dims = outputs_[0].shape;
  for (std::size_t a = 0; a < dims.size(); ++a)
    if (dims[a] < 0) {
      if (a != 0 || input_shape.rank() == 0)
        throw InvalidArgument(fmt::format("onnx graph {}: output '{}' has dimension {} set by values, not by the "
                                          "input shape; run forward to learn it",
                                          label_, outputs_[0].name, a));
      dims[a] = input_shape[0];
    }
  return Shape(dims);
}

std::string GraphBlock::describe() const {
  return fmt::format("OnnxGraph({}: {} nodes, opset {})", label_, model_.graph().node_size(), opset_);
}

NDList run_subgraph(const RunContext& c, std::size_t k, NDList formal) {
  NDGC_ASSERT(k < c.subgraphs.size(), "the node has that subgraph");
  const Subgraph& sub = c.subgraphs[k];
  for (std::size_t i : sub.captured) formal.push_back(c.has(i) ? c.in(i) : NDArray{});
  NDList out = sub.block->forward(formal, c.training);
  // A subgraph's constant is the model's: seen through a view in the run's
  // manager (Note [A pass leaves the model's manager alone]).
  NDList moved;
  for (const NDArray& o : out) moved.push_back(o.manager().same(c.manager) ? o : o.get(c.manager, NDIndex()));
  return moved;
}

::onnx::ModelProto GraphBlock::current_model() const {
  ::onnx::ModelProto out = model_;
  auto& inits = *out.mutable_graph()->mutable_initializer();
  NDGC_ASSERT(inits.size() == int(params_.size()), "one parameter per initializer");
  for (int k = 0; k < inits.size(); ++k) {
    const std::string name = inits[k].name();
    to_tensor(params_[std::size_t(k)]->array(), inits[k]);
    inits[k].set_name(name);
  }
  return out;
}

}  // namespace ndgc::onnx::detail
