// ONNX import and export: a graph from any framework becomes an nn::Block of
// ndgc ops, so its memory is managed, traced and served like a native model's.
//
//   onnx::Imported net = onnx::load("resnet18.onnx", "resnet18");
//   NDArray logits = net.model.block().forward(NDList{images}, /*training=*/false).head();
//   for (auto& [name, p] : net.model.parameters()) { ... }   // the graph's initializer names
//   onnx::save(net, "resnet18-tuned.onnx");                    // the graph, current weights
//
// Linked as ndgc::onnx, built when Debian's libonnx-dev is found. The file is
// parsed, checked (onnx::checker) and shape-inferred by ONNX's own library.
// Initializers become the model's parameters under their graph names: the
// floating ones trainable (ImportOptions::trainable), the others constants.
// Nodes whose inputs are all constants are evaluated once at load. A forward
// pass releases each intermediate after its last consumer has run.
//
// Errors: a file that is not a valid model is DataError naming the file and
// the parser's or checker's message. A graph with nodes this build cannot run
// (op type, domain, opset, attribute or dtype) is InvalidArgument at load,
// listing every such node with its op type, name and reason. At forward, an
// input of the wrong dtype is DTypeMismatch, of the wrong rank or static
// dimension ShapeMismatch, naming the graph input. A failed load leaves
// nothing allocated. docs/onnx.md has what is supported and why.
//
// Thread-safety: as nn::Block: forward() may run on several threads at once
// (each call keeps its intermediates to itself); load and save may run
// concurrently with anything that does not use the same Imported.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ndgc/device.hpp"
#include "ndgc/dtype.hpp"
#include "ndgc/model.hpp"

namespace ndgc::onnx {

struct ValueInfo {
  std::string name;
  DataType dtype;
  std::vector<std::int64_t> shape;  // -1 for a dynamic axis
};

struct ImportOptions {
  bool trainable = true;  // float initializers become trainable parameters; false: constants
};

struct Imported {
  Model model;                    // the graph as an nn::Block; its initializers are the model's parameters
  std::vector<ValueInfo> inputs;  // graph inputs that are not initializers, in graph order
  std::vector<ValueInfo> outputs; // graph outputs, in graph order
  std::int64_t opset = 0;         // of the default domain
};

Imported load(const std::filesystem::path& file, std::string name, Device device = Device::cpu(),
              ImportOptions options = {});
// The same graph, with each initializer holding its parameter's current value.
void save(Imported& imported, const std::filesystem::path& file);
// The op types of the default domain that this build runs, sorted.
std::vector<std::string> supported_ops();

}  // namespace ndgc::onnx
