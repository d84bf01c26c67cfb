// GraphBlock: an ONNX graph as an nn::Block of ndgc ops.
//
// Built in two stages, so that a refused graph allocates nothing:
//   1. GraphBlock(model, label) plans: it gives every value a slot, finds
//      each node's kernel and checks it, and throws InvalidArgument listing
//      every node this build cannot run.
//   2. materialize(manager, trainable) makes the initializers parameters in
//      `manager` (the model's) under their graph names, evaluates the nodes
//      whose inputs are all constants once (Note [Folding at load]), and
//      works out when each intermediate dies.
// A forward pass keeps its values in a vector of its own and drops each
// intermediate after its last consumer (Note [An intermediate dies at its
// last use]), so its peak follows the live set, not the graph's size.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ndgc/nn.hpp"
#include "ndgc/onnx.hpp"
#include "onnx/kernels.hpp"
#include "onnx/proto.hpp"

namespace ndgc::onnx::detail {

// What shape inference says of a value.
struct TypeInfo {
  std::int32_t elem = 0;
  std::optional<std::vector<std::int64_t>> dims;  // -1 for an unknown dimension
};
using Constants = std::unordered_map<std::string, const ::onnx::TensorProto*>;  // by value name

class GraphBlock : public nn::Block {
 public:
  GraphBlock(::onnx::ModelProto model, std::string label);
  void materialize(const ManagerRef& manager, bool trainable);

  using Block::forward;
  NDList forward(const NDList& inputs, bool training) override;
  Shape initialize(const ManagerRef& manager, const Shape& input_shape, DataType dtype = DataType::float32) override;
  Shape output_shape(const Shape& input_shape) const override;
  std::string describe() const override;

  const std::vector<ValueInfo>& graph_inputs() const noexcept { return inputs_; }
  const std::vector<ValueInfo>& graph_outputs() const noexcept { return outputs_; }
  std::int64_t opset() const noexcept { return opset_; }
  std::size_t step_count() const noexcept { return steps_.size(); }
  // The model as loaded, each initializer holding its parameter's current value.
  ::onnx::ModelProto current_model() const;

 private:
  struct Step {
    const Kernel* kernel;
    Node node;
    std::vector<int> inputs;   // slots; -1 for an omitted optional input; then the subgraphs' captured values
    std::vector<int> outputs;  // slots; -1 for an output nobody asked for
    std::vector<int> release;  // slots whose last use is this step
    std::vector<Subgraph> subgraphs;
    std::vector<std::unique_ptr<GraphBlock>> owned;  // the subgraphs' blocks
    // Shape arithmetic: Shape, Size, or a node whose outputs are all integer
    // or boolean (Note [Shape arithmetic on the host], graph_host.cpp).
    bool shapes = false;
  };
  // One pass's values on the host beside the device (Note [Shape arithmetic
  // on the host], graph_host.cpp); inactive on the CPU.
  class HostSide {
   public:
    HostSide(const GraphBlock& graph, const ManagerRef& run, Device device);
    ~HostSide();  // closes the pass's host values
    HostSide(const HostSide&) = delete;
    HostSide& operator=(const HostSide&) = delete;
    bool active() const noexcept { return active_; }
    bool runs(const Step& step) const;             // the step runs on the host
    const ManagerRef& manager();                   // where a host step's arrays go
    NDArray input(int s, const std::vector<NDArray>& values);  // slot s for a host step
    const std::vector<NDArray>& values() const noexcept { return host_; }  // by slot; empty handles elsewhere
    void set(int s, NDArray value) { host_[std::size_t(s)] = std::move(value); }
    void release(int s) { host_[std::size_t(s)].reset(); }
    NDArray on_device(int s);                      // slot s copied to the pass's device, in its manager

   private:
    const GraphBlock& graph_;
    ManagerRef run_;
    Device device_;
    bool active_;
    std::vector<NDArray> host_;  // by slot
    std::optional<NDManager> manager_;
  };
  std::string plan_subgraphs(Step& step, const std::unordered_map<std::string, TypeInfo>& types,
                             const std::vector<bool>& defined);
  // Note [Fused layer norms] and Note [Fused projections] (graph_fusion.cpp).
  class Fusion;
  void fuse(const std::unordered_map<std::string, TypeInfo>& types, const Constants& constants);
  void fuse_layer_norms(const std::unordered_map<std::string, TypeInfo>& types, const Constants& constants);
  void fuse_projections(const std::unordered_map<std::string, TypeInfo>& types);
  void plan_values();
  void plan_static_shapes(const std::unordered_map<std::string, TypeInfo>& types);
  void plan_steps();
  void fold_constants();
  void plan_releases();
  static bool is_shape_arithmetic(const Step& step, const std::unordered_map<std::string, TypeInfo>& types);
  void mirror_integer_constants();
  void check_inputs(const NDList& inputs) const;
  int slot(const std::string& name) const;

  ::onnx::ModelProto model_;  // initializers' data cleared once they are parameters
  std::string label_;
  std::int64_t opset_ = 0;
  std::vector<std::string> slot_names_;
  std::unordered_map<std::string, int> slot_of_;
  std::vector<NDArray> constants_;     // by slot: parameters and folded values
  std::vector<bool> foldable_;         // by slot: a constant whose value never changes
  std::vector<NDArray> host_constants_;  // by slot, on a GPU: a host copy of each integer or boolean constant
  std::vector<std::optional<Shape>> static_shapes_;  // by slot: the shape inference fixed, if it did
  std::vector<nn::Parameter*> params_; // by initializer, in graph order
  std::vector<Step> steps_;
  std::deque<::onnx::NodeProto> fused_nodes_;  // the nodes fusion made (a Step's Node points at its proto)
  std::vector<int> input_slots_, output_slots_;
  std::vector<bool> rank_known_;       // by graph input
  std::vector<ValueInfo> inputs_, outputs_;
  ManagerRef manager_;                 // the model's
};

}  // namespace ndgc::onnx::detail
