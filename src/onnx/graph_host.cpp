// A graph's shape arithmetic on the host when the graph runs on a GPU.
//
// Note [Shape arithmetic on the host]
// Exporters write the shapes a graph computes as nodes: a flatten before
// the classifier is Shape → Gather → Unsqueeze → Concat → Reshape, because
// the batch axis is dynamic. Their values are a few int64 numbers that the
// next kernel needs on the host (Reshape's shape, Slice's bounds, the axes
// of Squeeze). On a GPU, computing them there and reading them back would
// make each pass wait for the device several times, for numbers that the
// host already knows: the shapes of the arrays it launched kernels on. So,
// as ONNX Runtime keeps a CUDA graph's shape values in CPU memory:
//   - at load, each integer or boolean constant (initializers, Constant
//     nodes, folded values) gets a host copy beside its device array;
//   - a pass runs a step on the host when the step is shape arithmetic
//     (Shape and Size, which read only their input's shape, or a node whose
//     outputs are all integer or boolean) and every input it reads is on
//     the host; its outputs stay there, in a CPU sub-manager of the pass;
//   - every other step runs on the device; RunContext::ints, doubles and
//     scalar read an input's host copy where the pass has one, and a host
//     value that a device step computes with is copied to the device at
//     its first use (RunContext::in), once a pass;
//   - a graph output still on the host is copied to the device at the end,
//     so outputs are where the inputs were, and the host sub-manager closes.
// A resnet's or a transformer's pass then makes no copy in either direction
// (tests/onnx/device_test.cpp counts them on the simulated GPU). If's and
// Loop's conditions are read on the host when shape arithmetic made them;
// values that depend on the data (NonZero, TopK's positions, a condition
// computed from values) are still read from the device. On the CPU all of
// this is off: the host and the device are one.
#include "onnx/graph_block.hpp"

#include <optional>

#include "ndgc/ndindex.hpp"
#include "onnx/tensors.hpp"

namespace ndgc::onnx::detail {

namespace {

bool integral(std::int32_t elem) {
  const std::optional<DataType> dtype = dtype_of_elem(elem);
  return dtype && !is_floating(*dtype);
}

}  // namespace

bool GraphBlock::is_shape_arithmetic(const Step& step, const std::unordered_map<std::string, TypeInfo>& types) {
  if (step.kernel->reads_shape_only) return true;
  if (step.kernel->uses_mode || !step.subgraphs.empty() || step.node.proto().output_size() == 0) return false;
  for (const auto& name : step.node.proto().output()) {
    if (name.empty()) continue;
    auto it = types.find(name);
    if (it == types.end() || !integral(it->second.elem)) return false;
  }
  return true;
}

void GraphBlock::mirror_integer_constants() {
  host_constants_.clear();
  if (manager_.device().is_cpu()) return;
  host_constants_.assign(constants_.size(), NDArray{});
  for (std::size_t s = 0; s < constants_.size(); ++s)
    if (constants_[s].defined() && !is_floating(constants_[s].dtype())) {
      host_constants_[s] = constants_[s].to_device(Device::cpu());
      host_constants_[s].set_name(slot_names_[s] + " (host copy)");
    }
}

GraphBlock::HostSide::HostSide(const GraphBlock& graph, const ManagerRef& run, Device device)
    : graph_(graph), run_(run), device_(device), active_(!device.is_cpu() && !graph.host_constants_.empty()) {
  if (active_) host_ = graph.host_constants_;
}

GraphBlock::HostSide::~HostSide() {
  if (manager_) manager_->close();
}

bool GraphBlock::HostSide::runs(const Step& step) const {
  if (!active_ || !step.shapes) return false;
  if (step.kernel->reads_shape_only) return true;
  for (int s : step.inputs)
    if (s >= 0 && !host_[std::size_t(s)].defined()) return false;
  return true;
}

const ManagerRef& GraphBlock::HostSide::manager() {
  if (!manager_) manager_.emplace(run_.new_sub_manager("onnx host values", Device::cpu()));
  return *manager_;
}

NDArray GraphBlock::HostSide::input(int s, const std::vector<NDArray>& values) {
  const NDArray& h = host_[std::size_t(s)];
  if (!h.defined()) return values[std::size_t(s)];  // Shape's or Size's input: only its shape is read
  // A constant is seen through a view in the pass's manager (Note [A pass
  // leaves the model's manager alone]); here, the host one.
  return graph_.constants_[std::size_t(s)].defined() ? h.get(manager(), NDIndex()) : h;
}

NDArray GraphBlock::HostSide::on_device(int s) {
  NDArray moved = host_[std::size_t(s)].to_device(device_);
  run_.attach(moved);
  return moved;
}

}  // namespace ndgc::onnx::detail
