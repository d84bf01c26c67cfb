// See model_file.hpp.
#include "onnx/model_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <map>
#include <string>

#include <fmt/format.h>

#include "support/atomic_write.hpp"
#include "ndgc/error.hpp"

namespace ndgc::onnx::detail {
namespace {

std::string read_bytes(const std::filesystem::path& file, const char* what) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw DataError(fmt::format("onnx::load: cannot open {} {}: {}", what, file.string(), std::strerror(errno)));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw DataError(fmt::format("onnx::load: error reading {} {}", what, file.string()));
  return bytes;
}

// Where an external-data initializer's bytes are: "location" relative to the
// model's folder (never absolute, never climbing out of it), "offset" and
// "length" in bytes.
struct ExternalData {
  std::string location;
  std::uint64_t offset = 0;
  std::optional<std::uint64_t> length;
};

ExternalData external_data_of(const ::onnx::TensorProto& tensor, const std::string& label) {
  ExternalData out;
  for (const auto& entry : tensor.external_data()) {
    try {
      if (entry.key() == "location") out.location = entry.value();
      else if (entry.key() == "offset") out.offset = std::stoull(entry.value());
      else if (entry.key() == "length") out.length = std::stoull(entry.value());
    } catch (const std::exception&) {
      throw DataError(fmt::format("onnx::load: {}: initializer '{}' has a malformed external-data {} '{}'", label,
                                  tensor.name(), entry.key(), entry.value()));
    }
  }
  const std::filesystem::path where(out.location);
  bool climbs = false;
  for (const auto& part : where) climbs = climbs || part == "..";
  if (out.location.empty() || where.is_absolute() || climbs)
    throw DataError(fmt::format("onnx::load: {}: initializer '{}' has external data at '{}'; it must be a relative "
                                "path inside the model's folder",
                                label, tensor.name(), out.location));
  return out;
}

// Replaces an external-data initializer's reference by its bytes.
void inline_external_data(::onnx::TensorProto& tensor, const std::filesystem::path& directory,
                          const std::string& label) {
  const ExternalData ext = external_data_of(tensor, label);
  const std::filesystem::path file = directory / ext.location;
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw DataError(fmt::format("onnx::load: {}: initializer '{}': cannot open its external data {}: {}", label,
                                tensor.name(), file.string(), std::strerror(errno)));
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<std::uint64_t>(in.tellg());
  const std::uint64_t length = ext.length.value_or(file_size >= ext.offset ? file_size - ext.offset : 0);
  if (ext.offset > file_size || length > file_size - ext.offset)
    throw DataError(fmt::format("onnx::load: {}: initializer '{}': its external data (offset {}, length {}) runs past "
                                "the end of {} ({} bytes)",
                                label, tensor.name(), ext.offset, length, file.string(), file_size));
  std::string bytes(length, '\0');
  in.seekg(static_cast<std::streamoff>(ext.offset));
  in.read(bytes.data(), static_cast<std::streamsize>(length));
  if (!in) throw DataError(fmt::format("onnx::load: {}: error reading {}", label, file.string()));
  tensor.clear_external_data();
  tensor.set_data_location(::onnx::TensorProto::DEFAULT);
  tensor.set_raw_data(std::move(bytes));
}

void inline_graph_external_data(::onnx::GraphProto& graph, const std::filesystem::path& directory,
                                const std::string& label) {
  for (auto& tensor : *graph.mutable_initializer())
    if (tensor.data_location() == ::onnx::TensorProto::EXTERNAL) inline_external_data(tensor, directory, label);
}

// Note [Attributes ONNX's shape inference divides by]
// libonnx 1.12's shape inference divides by some attributes without checking
// them: a Conv with a stride of 0 stops the process with SIGFPE inside
// convPoolShapeInference1 (found by tests/fuzz/onnx_model_fuzz.cpp). Those
// attributes are checked first, in the graph and every subgraph, so such a
// model is a DataError instead.
void check_divisors(const ::onnx::GraphProto& graph, const std::string& label) {
  for (const auto& node : graph.node())
    for (const auto& a : node.attribute()) {
      const std::string& n = a.name();
      const bool divisor = n == "strides" || n == "dilations" || n == "kernel_shape" || n == "blocksize";
      bool bad = divisor && a.has_i() && a.i() <= 0;
      for (std::int64_t v : a.ints()) bad = bad || (divisor && v <= 0);
      if (bad)
        throw DataError(fmt::format("onnx::load: {}: node '{}' ({}) has attribute {} that is not positive", label,
                                    node.name(), node.op_type(), n));
      if (a.has_g()) check_divisors(a.g(), label);
      for (const auto& g : a.graphs()) check_divisors(g, label);
    }
}

// Note [Ranks ONNX's shape inference indexes by]
// libonnx 1.12's shape inference for LayerNormalization indexes its input's
// dimensions by `axis` without checking it against the rank: a rank-0 input,
// or an axis outside [-rank, rank), reads past the shape and stops the
// process with SIGSEGV inside InferShapes (found by
// tests/fuzz/onnx_model_fuzz.cpp). Where the input's rank is declared (a
// graph input, a value_info, an initializer), such a node is a DataError
// first; an intermediate's rank is known only to the inference itself.
void check_axes(const ::onnx::GraphProto& graph, const std::string& label) {
  std::map<std::string, int> ranks;
  auto note = [&](const ::onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
      ranks[v.name()] = v.type().tensor_type().shape().dim_size();
  };
  for (const auto& v : graph.input()) note(v);
  for (const auto& v : graph.value_info()) note(v);
  for (const auto& t : graph.initializer()) ranks[t.name()] = t.dims_size();
  for (const auto& node : graph.node()) {
    for (const auto& a : node.attribute()) {
      if (a.has_g()) check_axes(a.g(), label);
      for (const auto& g : a.graphs()) check_axes(g, label);
    }
    if (node.op_type() != "LayerNormalization" || node.input_size() == 0) continue;
    const auto known = ranks.find(node.input(0));
    if (known == ranks.end()) continue;
    std::int64_t axis = -1;
    for (const auto& a : node.attribute())
      if (a.name() == "axis" && a.has_i()) axis = a.i();
    const int rank = known->second;
    if (rank == 0 || axis < -rank || axis >= rank)
      throw DataError(fmt::format("onnx::load: {}: node '{}' (LayerNormalization) has axis {} for input '{}' of "
                                  "rank {}",
                                  label, node.name(), axis, node.input(0), rank));
  }
}

}  // namespace

::onnx::ModelProto parse_model(const void* data, std::size_t size, const std::string& label,
                               const std::filesystem::path& directory) {
  ::onnx::ModelProto model;
  if (size > static_cast<std::size_t>(INT32_MAX) || !model.ParseFromArray(data, static_cast<int>(size)))
    throw DataError(fmt::format("onnx::load: {}: not an ONNX model (the protobuf parser refused its {} bytes)", label,
                                size));
  if (!model.has_graph())
    throw DataError(fmt::format("onnx::load: {}: not an ONNX model (it has no graph)", label));
  inline_graph_external_data(*model.mutable_graph(), directory, label);
  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw DataError(fmt::format("onnx::load: {}: the ONNX checker refused it: {}", label, e.what()));
  }
  check_divisors(model.graph(), label);
  check_axes(model.graph(), label);
  try {
    ::onnx::shape_inference::InferShapes(model);
  } catch (const std::exception& e) {
    throw DataError(fmt::format("onnx::load: {}: ONNX shape inference failed: {}", label, e.what()));
  }
  return model;
}

::onnx::ModelProto read_model(const std::filesystem::path& file) {
  const std::string bytes = read_bytes(file, "model");
  return parse_model(bytes.data(), bytes.size(), file.string(), file.parent_path());
}

void write_model(const ::onnx::ModelProto& model, const std::filesystem::path& file) {
  support::write_atomically(file, "onnx::save", [&](std::ostream& out) { return model.SerializeToOstream(&out); });
}

}  // namespace ndgc::onnx::detail
