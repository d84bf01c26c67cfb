// Control flow: If, Loop and Scan, each running its subgraphs as blocks
// (Note [Subgraphs read the outer scope] in graph_block.cpp). A condition and
// a trip count are read on the host, as shape arithmetic is; the values flow
// through ndgc's ops (slices, stacks and the subgraphs' own), so they record
// on the tape and a gradient reaches what the iterations read.
#include <algorithm>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "onnx/kernel_support.hpp"
#include "support/assert.hpp"

namespace ndgc::onnx::detail {
namespace {

constexpr std::size_t kAnyOutputs = std::size_t(1) << 20;

NDArray boolean_scalar(const RunContext& c, bool value) {
  return c.manager.full(Shape{}, value ? 1.0 : 0.0, DataType::boolean);
}

// Whether the node's formal input k is given (the run's inputs go on with
// the subgraphs' captured values, which RunContext::has would also see).
bool given(const RunContext& c, std::size_t k) { return c.node.input_given(k) && c.has(k); }

bool read_condition(const RunContext& c, const NDArray& condition, const char* what) {
  if (condition.size() != 1)
    throw ShapeMismatch(fmt::format("onnx: {}: {} has {} elements, not one", c.node.label(), what, condition.size()));
  return read_scalar(condition) != 0.0;
}

void run_if(RunContext& c) {
  NDList out = run_subgraph(c, read_condition(c, c.on_host(0), "the condition") ? 0 : 1, {});
  for (const NDArray& o : out) c.outputs.push_back(o);
}

// The scan outputs of iterations `parts`, stacked along a new axis 0; with
// no iteration, an empty array of the body's declared dtype and shape.
NDArray stacked(const RunContext& c, const NDList& parts, const ValueInfo& declared) {
  if (!parts.empty()) return stack(parts, 0);
  std::vector<std::int64_t> dims{0};
  for (std::int64_t d : declared.shape) dims.push_back(std::max<std::int64_t>(d, 0));
  return c.manager.zeros(to_shape(dims), declared.dtype);
}

// Loop: inputs M (trip count), cond, then the carried values; the body takes
// (iteration, cond, carried...) and gives (cond, carried..., scan outputs...).
std::size_t carried_count(const Node& node) { return node.input_count() > 2 ? node.input_count() - 2 : 0; }

void run_loop(RunContext& c) {
  const std::size_t carried = carried_count(c.node);
  if (given(c, 0) && c.on_host(0).size() != 1)
    throw ShapeMismatch(fmt::format("onnx: {}: the trip count M has {} elements, not one", c.node.label(),
                                    c.on_host(0).size()));
  const std::int64_t trips = given(c, 0) ? c.ints(0)[0] : std::numeric_limits<std::int64_t>::max();
  bool going = given(c, 1) ? read_condition(c, c.on_host(1), "cond") : true;
  NDList state;
  for (std::size_t k = 0; k < carried; ++k) state.push_back(c.in(2 + k));
  const std::span<const ValueInfo> body_outputs = c.subgraphs[0].outputs;
  NDGC_ASSERT(body_outputs.size() >= 1 + carried, "loop_check refused a body without its outputs");
  std::vector<NDList> scans(body_outputs.size() - 1 - carried);
  for (std::int64_t i = 0; i < trips && going; ++i) {
    NDList formal{make_ints(c, {i}, Shape{}), boolean_scalar(c, going)};
    for (const NDArray& v : state) formal.push_back(v);
    const NDList out = run_subgraph(c, 0, formal);
    going = read_condition(c, out[0], "the body's condition");
    for (std::size_t k = 0; k < carried; ++k) state[k] = out[1 + k];
    for (std::size_t k = 0; k < scans.size(); ++k) scans[k].push_back(out[1 + carried + k]);
  }
  for (const NDArray& v : state) c.outputs.push_back(v);
  for (std::size_t k = 0; k < scans.size(); ++k)
    c.outputs.push_back(stacked(c, scans[k], body_outputs[1 + carried + k]));
}

std::string loop_check(const CheckContext& c) {
  if (!c.node.input_given(0) && !c.node.input_given(1))
    return "neither a trip count M nor a condition: the loop would never end";
  // ONNX's checker accepts a body that gives too few outputs; its run could not.
  const std::size_t carried = carried_count(c.node);
  const ::onnx::AttributeProto* body = c.node.find("body");
  if (body && std::size_t(body->g().output_size()) < 1 + carried)
    return fmt::format("the body gives {} outputs for {} carried values (it must give the condition, then each "
                       "carried value)",
                       body->g().output_size(), carried);
  return "";
}

// Element `at` of `axis`, the axis dropped.
NDArray slice_at(const NDArray& x, int axis, std::int64_t at) {
  NDIndex index;
  for (int k = 0; k < axis; ++k) index.add_all();
  index.add_index(at);
  return x.get(index);
}

std::vector<std::int64_t> per_value(const Node& node, const char* attribute, std::size_t count) {
  std::vector<std::int64_t> v = node.ints(attribute, std::vector<std::int64_t>(count, 0));
  if (v.size() != count)
    throw InvalidArgument(fmt::format("onnx: {}: {} has {} entries for {} values", node.label(), attribute, v.size(),
                                      count));
  return v;
}

// One scan over `states` and `inputs` (opset 9's form): the body takes
// (states..., a slice of each input...) and gives (states..., slices...).
NDList scan(const RunContext& c, NDList states, const NDList& inputs, const std::vector<std::int64_t>& input_axes) {
  const std::size_t n = states.size();
  const std::span<const ValueInfo> body_outputs = c.subgraphs[0].outputs;
  NDGC_ASSERT(!inputs.empty() && body_outputs.size() >= n, "run_scan and scan_check refused such a scan");
  const std::size_t k_outputs = body_outputs.size() - n;
  const std::vector<std::int64_t> directions = per_value(c.node, c.opset < 9 ? "directions" : "scan_input_directions",
                                                         inputs.size());
  const std::vector<std::int64_t> out_axes = per_value(c.node, "scan_output_axes", k_outputs);
  const std::vector<std::int64_t> out_directions = per_value(c.node, "scan_output_directions", k_outputs);
  std::vector<int> axes;
  for (std::size_t j = 0; j < inputs.size(); ++j) axes.push_back(axis_in(input_axes[j], inputs[j].rank(), c.node));
  const std::int64_t steps = inputs[0].shape()[axes[0]];
  for (std::size_t j = 1; j < inputs.size(); ++j)
    if (inputs[j].shape()[axes[j]] != steps)
      throw ShapeMismatch(fmt::format("onnx: {}: scanned inputs of {} and {} steps", c.node.label(), steps,
                                      inputs[j].shape()[axes[j]]));
  std::vector<NDList> parts(k_outputs);
  for (std::int64_t t = 0; t < steps; ++t) {
    NDList formal = states;
    for (std::size_t j = 0; j < inputs.size(); ++j)
      formal.push_back(slice_at(inputs[j], axes[j], directions[j] != 0 ? steps - 1 - t : t));
    const NDList out = run_subgraph(c, 0, formal);
    for (std::size_t k = 0; k < n; ++k) states[k] = out[k];
    for (std::size_t k = 0; k < k_outputs; ++k) parts[k].push_back(out[n + k]);
  }
  NDList result = states;
  for (std::size_t k = 0; k < k_outputs; ++k) {
    NDList ordered;  // reversed for a reverse output: step t lands at steps - 1 - t
    for (std::int64_t t = 0; t < steps; ++t)
      ordered.push_back(parts[k][std::size_t(out_directions[k] != 0 ? steps - 1 - t : t)]);
    if (ordered.empty()) {
      result.push_back(stacked(c, ordered, body_outputs[n + k]));
      continue;
    }
    result.push_back(stack(ordered, axis_in(out_axes[k], ordered[0].rank() + 1, c.node)));
  }
  return result;
}

// Scan's inputs: `first` of them before the states (opset 8's
// sequence_lens), then `states`, then `scanned`; nullopt when
// num_scan_inputs does not fit the node's inputs. ONNX's shape inference
// refuses such a file first (tests/onnx/control_test.cpp); scan_check
// refuses it too, so that run_scan's arithmetic never sees one.
struct ScanLayout {
  std::size_t first, states, scanned;
};

std::optional<ScanLayout> scan_layout(const Node& node, std::int64_t opset) {
  const std::int64_t m = node.i("num_scan_inputs", 0);
  const std::size_t first = opset < 9 ? 1 : 0, total = node.input_count();
  if (m <= 0 || first + std::size_t(m) > total) return std::nullopt;
  return ScanLayout{first, total - first - std::size_t(m), std::size_t(m)};
}

// Scan: opset 9 on, (states..., scanned inputs...); opset 8, a leading batch
// axis on every value and an optional sequence_lens first (refused at load),
// each batch entry scanned on its own and the results stacked.
void run_scan(RunContext& c) {
  const std::optional<ScanLayout> layout = scan_layout(c.node, c.opset);
  NDGC_ASSERT(layout.has_value(), "scan_check refused a num_scan_inputs that does not fit");
  const std::size_t first = layout->first, n = layout->states, m = layout->scanned;
  NDList states, inputs;
  for (std::size_t k = 0; k < n; ++k) states.push_back(c.in(first + k));
  for (std::size_t k = 0; k < m; ++k) inputs.push_back(c.in(first + n + k));
  if (c.opset >= 9) {
    for (const NDArray& y : scan(c, states, inputs, per_value(c.node, "scan_input_axes", m))) c.outputs.push_back(y);
    return;
  }
  const std::int64_t batch = inputs[0].rank() > 0 ? inputs[0].shape()[0] : -1;
  for (const NDList* values : {&states, &inputs})
    for (const NDArray& v : *values)
      if (v.rank() == 0 || v.shape()[0] != batch)
        throw ShapeMismatch(fmt::format("onnx: {}: opset 8's Scan wants one batch axis first on every state and "
                                        "input; {} does not fit",
                                        c.node.label(), v.shape().to_string()));
  std::vector<NDList> per_output;
  for (std::int64_t b = 0; b < batch; ++b) {
    NDList entry_states, entry_inputs;
    for (const NDArray& s : states) entry_states.push_back(slice_at(s, 0, b));
    for (const NDArray& x : inputs) entry_inputs.push_back(slice_at(x, 0, b));
    const NDList out = scan(c, entry_states, entry_inputs, std::vector<std::int64_t>(m, 0));
    per_output.resize(out.size());
    for (std::size_t k = 0; k < out.size(); ++k) per_output[k].push_back(out[k]);
  }
  for (const NDList& parts : per_output) c.outputs.push_back(stack(parts, 0));
}

std::string scan_check(const CheckContext& c) {
  if (c.opset < 9 && c.node.input_given(0)) return "sequence_lens is not supported (every sequence runs the full length)";
  const std::optional<ScanLayout> layout = scan_layout(c.node, c.opset);
  if (!layout)
    return fmt::format("num_scan_inputs {} does not fit {} inputs", c.node.i("num_scan_inputs", 0),
                       c.node.input_count());
  // As Loop's: a body that cannot give back every state.
  const ::onnx::AttributeProto* body = c.node.find("body");
  if (body && std::size_t(body->g().output_size()) < layout->states)
    return fmt::format("the body gives {} outputs for {} states", body->g().output_size(), layout->states);
  return "";
}

}  // namespace

void add_control_kernels(KernelTable& t) {
  t.add("If", {run_if, nullptr, kAnyOutputs, false, 1});
  t.add("Loop", {run_loop, loop_check, kAnyOutputs, false, 1});
  t.add("Scan", {run_scan, scan_check, kAnyOutputs, false, 8});
}

}  // namespace ndgc::onnx::detail
