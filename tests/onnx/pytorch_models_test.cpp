// Models exported by PyTorch (tests/onnx/export_models.py, run here with
// Debian's python3-torch): ndgc's outputs and gradients against PyTorch's,
// and a fine-tuned graph saved, reloaded to the bit and checked in PyTorch.
// Skipped, with one line, where /usr/bin/python3 has no torch.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ndgc/ndgc.hpp>
#include <ndgc/onnx.hpp>

#include "exported_models.hpp"
#include "graph_builder.hpp"
#include "onnx/proto.hpp"
#include "sim_gpu.hpp"
#include "test_util.hpp"

namespace ndgc {
namespace {

const std::filesystem::path kModels = NDGC_ONNX_MODELS_DIR;
const std::string kScript = NDGC_ONNX_EXPORT_SCRIPT;

// Exports every model once per build folder (again when the script changes).
bool exported() {
  static const bool ok = [] {
    if (std::system("/usr/bin/python3 -c 'import torch, torchvision' >/dev/null 2>&1") != 0) return false;
    const auto stamp = kModels / "exported";
    if (std::filesystem::exists(stamp) &&
        std::filesystem::last_write_time(stamp) > std::filesystem::last_write_time(kScript))
      return true;
    std::filesystem::create_directories(kModels);
    if (std::system(fmt::format("/usr/bin/python3 {} {} >{}/export.log 2>&1", kScript, kModels.string(),
                                kModels.string()).c_str()) != 0)
      return false;
    std::ofstream(stamp) << "done\n";
    return true;
  }();
  return ok;
}

// Initializers that several layers read: PyTorch's exporter merges equal
// ones (squeezenet's zero biases become one), whose gradient then sums every
// reader's, unlike any one PyTorch parameter's. (Slices of one parameter, as
// the GRU's gate reordering, are not merges: their gradients sum to PyTorch's.)
std::set<std::string> shared_initializers(const std::filesystem::path& file) {
  ::onnx::ModelProto model;
  std::ifstream in(file, std::ios::binary);
  REQUIRE(model.ParseFromIstream(&in));
  std::map<std::string, int> readers;
  for (const auto& node : model.graph().node())
    if (node.op_type() != "Slice")  // the exporter's merges read through Identity nodes
      for (const auto& name : node.input()) ++readers[name];
  std::set<std::string> shared;
  for (const auto& t : model.graph().initializer())
    if (readers[t.name()] > 1) shared.insert(t.name());
  return shared;
}

NDArray input_of(const std::string& name, const ManagerRef& m) { return test::exported_input(kModels, name, m); }

}  // namespace

TEST_CASE("PyTorch's models: outputs and gradients of every initializer match PyTorch's") {
  if (!exported()) {
    MESSAGE("skipped: /usr/bin/python3 has no torch and torchvision (tools/bootstrap --tests installs python3-torch)");
    return;
  }
  for (const std::string& name : test::kExportedModels) {
    INFO(name);
    onnx::Imported net = onnx::load(kModels / (name + ".onnx"), name);
    NDManager batch = net.model.manager().new_sub_manager("batch");
    NDArray x = input_of(name, batch);
    NDArray y;
    {
      GradientCollector collector;
      y = net.model.block().forward(NDList{x}, false).head();
      collector.backward(y.square().sum().div(2.0));
    }
    CHECK(test::mismatches(y.to_vector<float>(), test::read_floats(kModels / (name + ".output.bin")), 1e-3, 1e-4) == 0);
    const nlohmann::json grads = test::read_json(kModels / (name + ".grads.json"))["grads"];
    const std::set<std::string> shared = shared_initializers(kModels / (name + ".onnx"));
    int compared = 0;
    for (auto& entry : net.model.parameters()) {  // INFO captures pname: no structured binding
      const auto& pname = entry.name;
      auto& p = entry.parameter;
      if (!grads.contains(pname) || shared.count(pname)) continue;
      INFO(pname);
      CHECK(test::scaled_mismatches(p->gradient().to_vector<float>(), grads[pname].get<std::vector<float>>(), 1e-3) == 0);
      ++compared;
    }
    // An eval-mode export folds BatchNorm into the convolutions, whose
    // initializers then carry the exporter's names, and merges equal ones:
    // the rest are compared.
    CHECK(compared > 0);
    MESSAGE(name << ": gradients of " << compared << " of " << grads.size() << " PyTorch parameters compared");
  }
}

// Note [Shape arithmetic on the host] (src/onnx/graph_host.cpp): no pass
// waits for the device to read a value back. The copies from the host left
// are index arrays a kernel works out on the host: the recurrent
// classifiers' Gather of the last step at index -1, made positive there, and
// the autoencoder's two ConvTransposes, which reverse their kernel's windows.
// Nor does any pass wait for an embedding's index check: the indices of
// every floating gather are checked on the host, and the engine is told so.
TEST_CASE("PyTorch's models on a simulated GPU: PyTorch's outputs, no copy to the host in a pass") {
  if (!exported()) {
    MESSAGE("skipped: /usr/bin/python3 has no torch and torchvision");
    return;
  }
  test::SimGpu gpu(test::SimGpu::kDefaultBudget, test::SimGpu::Kernels::layers);
  const std::map<std::string, std::uint64_t> uploads = {{"gru_classifier", 1}, {"lstm_classifier", 1}, {"autoencoder", 2}};
  for (const std::string& name : test::kExportedModels) {
    INFO(name);
    onnx::Imported net = onnx::load(kModels / (name + ".onnx"), name, Device::gpu(0));
    NDManager batch = net.model.manager().new_sub_manager("batch");
    NDArray x = input_of(name, batch);
    CHECK(x.device() == Device::gpu(0));
    gpu.reset_counts();
    NDArray y = net.model.block().forward(NDList{x}, false).head();
    MESSAGE(name << ": " << gpu.to_host_calls() << " copies to the host, " << gpu.from_host_calls() << " from it");
    CHECK(gpu.to_host_calls() == 0);
    CHECK(gpu.from_host_calls() == (uploads.count(name) ? uploads.at(name) : 0));
    CHECK(gpu.index_checks() == 0);  // their gathers' indices were checked on the host
    CHECK(y.device() == Device::gpu(0));
    CHECK(test::mismatches(y.to_vector<float>(), test::read_floats(kModels / (name + ".output.bin")), 1e-3, 1e-4) == 0);
  }
  CHECK(gpu.engine().residency_violations() == 0);
}

TEST_CASE("resnet18: with auto-close on, a forward pass peaks at a fraction of all its intermediates") {
  if (!exported()) {
    MESSAGE("skipped: /usr/bin/python3 has no torch and torchvision");
    return;
  }
  onnx::Imported net = onnx::load(kModels / "resnet18.onnx", "resnet18");
  test::AutoClose on(true);
  NDManager batch = net.model.manager().new_sub_manager("batch");
  NDArray x = input_of("resnet18", batch);
  gc::poll();
  memory::reset_peak(Device::cpu());
  const memory::Stats before = memory::stats(Device::cpu());
  NDArray y = net.model.block().forward(NDList{x}, false).head();
  const memory::Stats after = memory::stats(Device::cpu());
  const std::uint64_t all = after.allocated_bytes - before.allocated_bytes;
  const std::uint64_t peak = after.peak_bytes - before.current_bytes;
  MESSAGE("resnet18 " << x.shape().to_string() << ": every intermediate " << all << " bytes, peak above the inputs "
                      << peak << " bytes (" << 100.0 * double(peak) / double(all) << " %)");
  CHECK(peak < all / 3);
}

TEST_CASE("fine-tuning: a trained graph saved and loaded gives the same outputs to the bit, and PyTorch's") {
  if (!exported()) {
    MESSAGE("skipped: /usr/bin/python3 has no torch and torchvision");
    return;
  }
  test::TempFolder dir("finetune");
  onnx::Imported net = onnx::load(kModels / "fashion_cnn.onnx", "cnn");
  NDManager data = NDManager::new_base_manager("data");
  NDArray x = input_of("fashion_cnn", data);
  NDArray labels = data.create<std::int64_t>({1, 7, 3, 9});
  for (int step = 0; step < 5; ++step) {  // plain SGD
    NDManager batch = data.new_sub_manager("step");
    {
      GradientCollector collector;
      collector.backward(sparse_softmax_cross_entropy(net.model.block().forward(NDList{x}, true).head(), labels));
    }
    for (auto& [name, p] : net.model.block().trainable_parameters()) {
      NDArray a = p->array();
      a.sub_(p->gradient().mul(0.05));
    }
    autograd::zero_gradients(net.model.block().parameter_arrays());
  }
  onnx::save(net, dir / "tuned.onnx");
  onnx::Imported again = onnx::load(dir / "tuned.onnx", "again");
  const std::vector<float> before = net.model.block().forward(NDList{x}, false).head().to_vector<float>();
  CHECK(again.model.block().forward(NDList{x}, false).head().to_vector<float>() == before);

  nlohmann::json values;
  for (auto& [name, p] : again.model.parameters()) values["parameters"][name] = p->array().to_vector<float>();
  values["input"] = x.to_vector<float>();
  const Shape xs = x.shape();
  values["input_shape"] = std::vector<std::int64_t>(xs.begin(), xs.end());
  values["output"] = before;
  std::ofstream(dir / "values.json") << values.dump();
  CHECK(std::system(fmt::format("/usr/bin/python3 {} --check fashion_cnn {}", kScript,
                                (dir / "values.json").string()).c_str()) == 0);
}

}  // namespace ndgc
