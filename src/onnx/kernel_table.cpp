// The table of kernels, built once from the families.
#include <algorithm>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "onnx/kernel_support.hpp"
#include "onnx/kernels.hpp"
#include "support/assert.hpp"

namespace ndgc::onnx::detail {
namespace {

const KernelTable& table() {
  static const KernelTable built = [] {
    KernelTable t;
    add_elementwise_kernels(t);
    add_shape_kernels(t);
    add_nn_kernels(t);
    add_reduce_kernels(t);
    add_loss_kernels(t);
    add_recurrent_kernels(t);
    add_more_kernels(t);
    add_conv_transpose_kernels(t);
    add_resize_kernels(t);
    add_scatter_kernels(t);
    add_einsum_kernels(t);
    add_control_kernels(t);
    return t;
  }();
  return built;
}

}  // namespace

const NDArray& RunContext::in(std::size_t k) const {
  if (!has(k))
    throw InvalidArgument(fmt::format("onnx: {} needs input {}, which the graph leaves out", node.label(), k));
  if (!inputs[k].defined()) {  // held on the host alone: a copy to the device, which joins the run's manager
    NDArray moved = host[k].to_device(device);
    ManagerRef(manager).attach(moved);
    inputs[k] = moved;
  }
  return inputs[k];
}

const NDArray& RunContext::on_host(std::size_t k) const {
  if (k < host.size() && host[k].defined()) return host[k];
  return in(k);
}

std::vector<std::int64_t> RunContext::ints(std::size_t k) const { return read_ints(on_host(k)); }
std::vector<double> RunContext::doubles(std::size_t k) const { return read_doubles(on_host(k)); }
double RunContext::scalar(std::size_t k) const { return read_scalar(on_host(k)); }

void KernelTable::add(std::string op_type, Kernel kernel) {
  NDGC_ASSERT(kernel.run != nullptr, "a kernel must run");
  auto at = std::lower_bound(kernels_.begin(), kernels_.end(), op_type,
                             [](const auto& entry, const std::string& name) { return entry.first < name; });
  NDGC_ASSERT(at == kernels_.end() || at->first != op_type, "an op type has one kernel");
  kernels_.insert(at, {std::move(op_type), kernel});
}

const Kernel* KernelTable::find(const std::string& op_type) const {
  auto at = std::lower_bound(kernels_.begin(), kernels_.end(), op_type,
                             [](const auto& entry, const std::string& name) { return entry.first < name; });
  return at != kernels_.end() && at->first == op_type ? &at->second : nullptr;
}

std::vector<std::string> KernelTable::names() const {
  std::vector<std::string> out;
  for (const auto& [name, kernel] : kernels_) out.push_back(name);
  return out;
}

const Kernel* find_kernel(const std::string& op_type) { return table().find(op_type); }
std::vector<std::string> kernel_names() { return table().names(); }

}  // namespace ndgc::onnx::detail
