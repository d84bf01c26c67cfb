// Fuzzes the ONNX importer (onnx::load, src/onnx/). Any bytes either load or
// raise DataError (not a valid model) or InvalidArgument (a node this build
// cannot run); OutOfMemory only where folding a constant would pass the
// fuzz's memory limit. A model that loads runs one forward pass on zeros,
// which may raise any ndgc::Error but never crash. No leak. See fuzz_util.hpp.
#include <cstdint>
#include <filesystem>

#include <ndgc/onnx.hpp>

#include "fuzz_util.hpp"

using namespace ndgc;

namespace {

constexpr std::int64_t kMaxInputElements = 1 << 16;

// Zeros for every graph input (dynamic axes of length 1); false when an input is too big.
bool zeros_for(const onnx::Imported& net, const ManagerRef& m, NDList& out) {
  for (const auto& in : net.inputs) {
    std::vector<std::int64_t> dims;
    std::int64_t count = 1;
    for (std::int64_t d : in.shape) {
      dims.push_back(d < 0 ? 1 : d);
      count *= std::max<std::int64_t>(dims.back(), 1);
      if (count > kMaxInputElements || dims.size() > std::size_t(kMaxRank)) return false;
    }
    out.push_back(m.zeros(Shape(dims), in.dtype));
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path file = fuzz::scratch_file("onnx");
  fuzz::write_file(file, data, size);
  memory::set_limit(Device::cpu(), std::uint64_t{256} << 20);
  fuzz::Balance balance;
  try {
    onnx::Imported net = onnx::load(file, "fuzz");
    NDManager batch = NDManager::new_base_manager("fuzz-forward");
    NDList inputs;
    if (zeros_for(net, batch, inputs)) {
      try {
        NDList out = net.model.block().forward(inputs, false);
      } catch (const Error&) {
      }
    }
  } catch (const DataError&) {
  } catch (const InvalidArgument&) {
  } catch (const OutOfMemory&) {
  }
  balance.check("onnx_model_fuzz");
  std::filesystem::remove(file);
  return 0;
}
