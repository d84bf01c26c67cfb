// One pass of a graph and its gradients, to compare devices: the ONNX suite
// (on the simulated GPU) and test_gpu (on a real one) run it on the CPU and
// on the GPU and compare what it returns.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <ndgc/ndgc.hpp>
#include <ndgc/onnx.hpp>

namespace ndgc::test {

struct PassResult {
  std::vector<float> output;
  std::map<std::string, std::vector<float>> gradients;  // of sum(output²)/2, by trainable initializer
};

// Loads `file` onto `device`, runs the input `make_input` creates in the
// pass's manager forward, then backward from sum(y²)/2 (eval mode).
inline PassResult forward_backward(const std::filesystem::path& file, Device device,
                                   const std::function<NDArray(const ManagerRef&)>& make_input) {
  onnx::Imported net = onnx::load(file, file.stem().string(), device);
  NDManager batch = net.model.manager().new_sub_manager("batch");
  NDArray x = make_input(batch);
  PassResult r;
  {
    GradientCollector collector;
    NDArray y = net.model.block().forward(NDList{x}, false).head();
    REQUIRE(y.device() == device);
    collector.backward(y.square().sum().div(2.0));
    r.output = y.to_vector<float>();
  }
  for (auto& [name, p] : net.model.parameters()) {
    if (!p->array().requires_gradient()) continue;  // running statistics, integers
    REQUIRE(p->gradient().device() == device);
    r.gradients[name] = p->gradient().to_vector<float>();
  }
  return r;
}

}  // namespace ndgc::test
