// Model: a block, the manager that owns its parameters, and parameter files
// (DJL's Model).
//
//   Model model("mlp", std::make_unique<nn::Mlp>(784, 10, std::vector<std::int64_t>{128, 64}));
//   model.initialize(Shape{1, 784});     // parameters in model.manager()
//   model.save("mlp.ndgc");
//   Model copy("mlp", std::make_unique<nn::Mlp>(784, 10, std::vector<std::int64_t>{128, 64}));
//   copy.load("mlp.ndgc");              // initializes copy's parameters from the file
//
// The model's manager is a base manager (child of the system manager) named
// after the model; trainers and predictors hang their managers under it
// (docs/design.md §4: model → trainer → batch, model → predictor → context).
// Destroying the model closes that manager and everything below it.
//
// Parameter file format, version 1 (all integers little-endian):
//   magic        8 bytes  "NDGCPARM"
//   version      u32      1
//   count        u32      number of parameters
//   count times:
//     name_len   u32      then name_len bytes of UTF-8 (the full parameter name)
//     dtype      u8       0 float32, 1 float64, 2 int32, 3 int64, 4 uint8, 5 boolean,
//                         6 float16, 7 bfloat16 (version 1 too: older files never hold them)
//     rank       u8       at most 8
//     dims       rank × i64
//     data_len   u64      size(dims) × element size
//     data       data_len bytes, row-major
//   crc32        u32      zlib's CRC-32 of every byte before it
// save() writes a temporary file next to the target and renames it over the
// target, so a crash never leaves half a file under the target's name.
// load() validates everything first — magic, version, checksum, structure,
// that the names are exactly the model's parameters, and the dtype and shape
// of each initialized parameter — and stages the data in a temporary
// sub-manager; only then does it copy into the parameters (in place: their
// handles, gradients and optimizer state stay valid). A missing, truncated
// or corrupt file, or one for another model, raises DataError naming the file
// and the problem, and leaves the model unchanged.
//
// Thread-safety: save() may run while other threads predict; load() must not
// run concurrently with anything that uses the parameters.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "ndgc/device.hpp"
#include "ndgc/manager.hpp"
#include "ndgc/nn.hpp"

namespace ndgc {

class Model {
 public:
  Model(std::string name, std::unique_ptr<nn::Block> block, Device device = Device::cpu());
  Model(Model&&) noexcept = default;
  Model& operator=(Model&&) noexcept = default;
  ~Model();

  const std::string& name() const noexcept { return name_; }
  ManagerRef manager() const noexcept { return manager_; }
  nn::Block& block() noexcept { return *block_; }
  // Initializes the block's parameters in the model's manager; returns the output shape.
  Shape initialize(const Shape& input_shape, DataType dtype = DataType::float32);
  nn::ParameterList parameters() { return block_->parameters(); }

  void save(const std::filesystem::path& file);
  void load(const std::filesystem::path& file);
  // Converts every floating parameter (weights and running statistics) to the
  // floating `dtype`, once: ndgc-serve --precision bf16 serves a float32 file
  // in 16 bits this way. The old arrays close. InvalidArgument for a dtype
  // that is not floating, naming it.
  void cast(DataType dtype);

 private:
  std::string name_;
  NDManager manager_;                 // declared first: destroyed last
  std::unique_ptr<nn::Block> block_;  // parameters' handles die before the manager closes
};

}  // namespace ndgc
