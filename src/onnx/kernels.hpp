// The op kernels: how each ONNX op type becomes ndgc ops.
//
// A kernel has a check, run at load on what the graph says of the node (its
// attributes, opset and the dtypes shape inference found), which returns why
// this build cannot run the node ("" when it can), and a run, which computes
// the node's outputs from its inputs with ndgc's ops, so that they record on
// the tape and run on the inputs' device. Kernels that read small integer
// inputs (shapes, axes, slice bounds) read them on the host: see
// Note [Shape arithmetic on the host] in graph_host.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ndgc/manager.hpp"
#include "ndgc/ndlist.hpp"
#include "ndgc/onnx.hpp"
#include "onnx/node.hpp"

namespace ndgc::onnx::detail {

// What a check sees at load.
struct CheckContext {
  const Node& node;
  std::int64_t opset;
  // Per input: its dtype when the graph says it (nullopt: unknown or omitted).
  std::vector<std::optional<DataType>> input_dtypes;
  // Per input: its value when it is an initializer or a Constant's (else null).
  std::vector<const ::onnx::TensorProto*> constant_inputs;
  // Per input: its shape when inference found one, -1 for unknown dimensions.
  std::vector<std::optional<std::vector<std::int64_t>>> input_shapes;
};

class GraphBlock;

// A graph attribute of a node (If's branches, Loop's and Scan's body),
// planned as a block of its own whose graph inputs are its formal inputs
// followed by the outer values it reads (Note [Subgraphs read the outer
// scope] in graph_block.cpp).
struct Subgraph {
  GraphBlock* block = nullptr;
  std::vector<std::size_t> captured;  // the outer values it reads: indices into the node's run inputs
  std::span<const ValueInfo> outputs;  // the subgraph's outputs, as its graph declares them
};

// What a run sees at forward.
struct RunContext {
  const Node& node;
  std::int64_t opset;
  // Each input as the kernel computes with it. An omitted optional input is
  // an empty handle, and so is one the pass holds on the host alone (below)
  // until in(k) asks for it.
  std::span<NDArray> inputs;
  const ManagerRef& manager;        // where arrays made from nothing go (the first graph input's)
  bool training;
  NDList outputs;                   // the run appends the node's outputs in order
  std::span<const Subgraph> subgraphs = {};  // by attribute, in the order subgraph_attributes names them
  // On a GPU, the inputs the pass also holds on the host, empty handles
  // elsewhere (Note [Shape arithmetic on the host] in graph_host.cpp):
  // ints, doubles and scalar read them there, with no copy from the device.
  std::span<const NDArray> host = {};
  Device device = Device::cpu();    // where in(k) copies an input held on the host alone

  bool has(std::size_t k) const {
    return k < inputs.size() && (inputs[k].defined() || (k < host.size() && host[k].defined()));
  }
  // Input k on `device`; InvalidArgument naming the node when it is omitted.
  // An input held on the host alone is copied to the device here, once.
  const NDArray& in(std::size_t k) const;
  // Input k's elements on the host, as int64 / double; one element as double.
  std::vector<std::int64_t> ints(std::size_t k) const;
  std::vector<double> doubles(std::size_t k) const;
  double scalar(std::size_t k) const;
  // Input k where the host reads it cheapest: its host copy when the pass
  // has one, otherwise in(k).
  const NDArray& on_host(std::size_t k) const;
};

struct Kernel {
  using Check = std::string (*)(const CheckContext&);
  using Run = void (*)(RunContext&);
  Run run = nullptr;
  Check check = nullptr;        // null: every node of the type runs
  std::size_t max_outputs = 1;  // a node asking for more outputs is refused
  bool uses_mode = false;       // depends on `training`: never folded at load
  std::int64_t min_opset = 6;   // older opsets: for op types whose meaning has not changed since
  // Reads only its input's shape, not its values (Shape, Size): it folds
  // when the shape is static, and on a GPU runs on the host (graph_host.cpp).
  bool reads_shape_only = false;
};

// Runs subgraph k of the node on `formal` inputs (then its captured outer
// values): its outputs, each in the run's manager.
NDList run_subgraph(const RunContext& c, std::size_t k, NDList formal);
// The graph attributes of an op type, in the order its kernel reads them.
std::vector<const char*> subgraph_attributes(const std::string& op_type);

// The kernel of a default-domain op type, or null.
const Kernel* find_kernel(const std::string& op_type);
// The step fusion puts in place of MatMul then Add of a bias (Note [Fused
// projections] in graph_fusion.cpp): ndgc's linear of its three inputs. Not
// an ONNX op type, so not in the table; kMatMulAdd is its nodes' op type.
inline constexpr const char* kMatMulAdd = "MatMul+Add";
const Kernel& matmul_add_kernel();
std::vector<std::string> kernel_names();  // sorted

// Each family adds its kernels (kernels_*.cpp).
class KernelTable;
void add_elementwise_kernels(KernelTable& table);
void add_shape_kernels(KernelTable& table);
void add_nn_kernels(KernelTable& table);
void add_reduce_kernels(KernelTable& table);
void add_loss_kernels(KernelTable& table);
void add_recurrent_kernels(KernelTable& table);
void add_more_kernels(KernelTable& table);
void add_conv_transpose_kernels(KernelTable& table);
void add_resize_kernels(KernelTable& table);
void add_scatter_kernels(KernelTable& table);
void add_einsum_kernels(KernelTable& table);
void add_control_kernels(KernelTable& table);

class KernelTable {
 public:
  void add(std::string op_type, Kernel kernel);
  const Kernel* find(const std::string& op_type) const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::pair<std::string, Kernel>> kernels_;  // sorted by name
};

}  // namespace ndgc::onnx::detail
