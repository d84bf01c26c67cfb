// onnx::load, onnx::save and onnx::supported_ops (ndgc/onnx.hpp).
#include "ndgc/onnx.hpp"

#include <memory>

#include "ndgc/error.hpp"

#include "onnx/graph_block.hpp"
#include "onnx/model_file.hpp"

namespace ndgc::onnx {

Imported load(const std::filesystem::path& file, std::string name, Device device, ImportOptions options) {
  auto block = std::make_unique<detail::GraphBlock>(detail::read_model(file), file.string());
  detail::GraphBlock& graph = *block;
  Imported out{Model(std::move(name), std::move(block), device), {}, {}, 0};
  graph.materialize(out.model.manager(), options.trainable);  // a throw here closes the model's manager
  out.inputs = graph.graph_inputs();
  out.outputs = graph.graph_outputs();
  out.opset = graph.opset();
  return out;
}

void save(Imported& imported, const std::filesystem::path& file) {
  auto* graph = dynamic_cast<detail::GraphBlock*>(&imported.model.block());
  if (!graph)
    throw InvalidArgument("onnx::save: the model's block is not an imported ONNX graph (use Model::save for it)");
  detail::write_model(graph->current_model(), file);
}

std::vector<std::string> supported_ops() { return detail::kernel_names(); }

}  // namespace ndgc::onnx
