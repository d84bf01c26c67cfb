// The parameter file of ndgc/model.hpp as bytes in memory: Model::save and
// Model::load are these plus the file, and a model file (ndgc/model_file.hpp)
// carries the same bytes after its architecture header.
#pragma once

#include <filesystem>
#include <vector>

#include "ndgc/model.hpp"

namespace ndgc::detail {

// The complete parameter file image of `model` (magic to CRC).
std::vector<unsigned char> parameter_bytes(Model& model);
// Model::load from an image; `file` only names it in errors (DataError).
void load_parameter_bytes(Model& model, const std::vector<unsigned char>& bytes, const std::filesystem::path& file);

}  // namespace ndgc::detail
