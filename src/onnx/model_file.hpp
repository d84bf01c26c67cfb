// Reading and writing ONNX files with ONNX's own library: the parser, the
// checker and shape inference. Nothing here knows ndgc's arrays.
#pragma once

#include <filesystem>

#include "onnx/proto.hpp"

namespace ndgc::onnx::detail {

// Parses `file`, brings external-data initializers into the model (their
// files beside `file`), runs the checker and shape inference. DataError
// names the file and what is wrong with it.
::onnx::ModelProto read_model(const std::filesystem::path& file);
// The same from bytes in memory (the fuzz target); `label` names them in errors.
::onnx::ModelProto parse_model(const void* data, std::size_t size, const std::string& label,
                               const std::filesystem::path& directory);
// Writes `model` to a temporary beside `file`, then renames it over `file`.
void write_model(const ::onnx::ModelProto& model, const std::filesystem::path& file);

}  // namespace ndgc::onnx::detail
