// Fuzzes the model-file loader (Model::load, src/nn/model_file.cpp). Any
// bytes, loaded into an initialized model and into an uninitialized one,
// either load or raise DataError; a failed load leaves the initialized
// model's parameters exactly as they were, and both models still run a
// forward pass. No crash, no leak. See fuzz_util.hpp.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "fuzz_util.hpp"

using namespace ndgc;

namespace {

// Mlp(4 -> 2, hidden 3): parameters 1.weight [4,3], 1.bias [3], 3.weight [3,2], 3.bias [2].
std::unique_ptr<nn::Block> net() { return std::make_unique<nn::Mlp>(4, 2, std::vector<std::int64_t>{3}); }

std::vector<std::vector<float>> values(Model& model) {
  std::vector<std::vector<float>> out;
  for (const nn::NamedParameter& p : model.parameters()) out.push_back(p.parameter->array().to_vector<float>());
  return out;
}

void forward(Model& model) {
  NDManager m = NDManager::new_base_manager("fuzz-forward");
  NDArray y = model.block().forward(NDList{m.ones({1, 4})}).head();
  (void)y.sum();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path file = fuzz::scratch_file("model");
  fuzz::write_file(file, data, size);
  fuzz::Balance balance;
  {
    Model model("fuzz", net());
    set_random_seed(1);
    model.initialize(Shape{1, 4});
    const auto before = values(model);
    try {
      model.load(file);
    } catch (const DataError&) {
      fuzz::expect(values(model) == before, "a failed load changed the model's parameters");
    }
    forward(model);
  }
  {
    Model fresh("fuzz", net());
    bool loaded = false;
    try {
      fresh.load(file);
      loaded = true;
    } catch (const DataError&) {
    }
    if (loaded) {
      // Initialized from the file: a forward pass runs if shapes and dtypes
      // chain; a file for another architecture (or float64 parameters) makes
      // it raise ShapeMismatch or DTypeMismatch, errors of the contract.
      try {
        forward(fresh);
      } catch (const Error&) {
      }
    }
  }
  balance.check("model_file_fuzz");
  std::filesystem::remove(file);
  return 0;
}
