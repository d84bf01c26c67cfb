// to_device: copies between devices through the engines' transfers.
//
// The CPU side is always a contiguous host view; the GPU engine stages it
// through pinned memory (gpu/cuda_engine.cpp). GPU → another GPU goes through
// a host buffer: simple, and rare enough (peer copies are for later).
//
// Under a GradientCollector the copy is recorded: backward sends the
// gradient back to the source's device (autograd/rules.cpp), so a model on
// the GPU can take a host array that requires a gradient, and the reverse.
#include <vector>

#include "ndgc/ndarray.hpp"
#include "ops/op_support.hpp"
#include "ops/record.hpp"
#include "support/gpu_probe.hpp"

namespace ndgc {

using namespace ndgc::ops;

NDArray NDArray::to_device(Device device, Site site) const {
  detail::enter();
  Pinned a(*this, "to_device");
  support::check_device(device, "to_device");
  auto out = new_output(a->shape, a->dtype, device, site, "to_device");
  const TensorView in = view_of(*a), dst = view_of(*out);
  if (a->device == device) {
    engine(device).copy(in, dst);
  } else if (a->device.is_cpu()) {
    engine(device).from_host(in, dst);
  } else if (device.is_cpu()) {
    engine(a->device).to_host(in, dst);
  } else {
    std::vector<unsigned char> host(std::size_t(a->size()) * size_of(a->dtype));
    const TensorView staged = contiguous_view(host.data(), a->dtype, a->shape);
    engine(a->device).to_host(in, staged);
    engine(device).from_host(staged, dst);
  }
  NDArray result = publish_like(std::move(out), *a, "to_device");
  record({.kind = OpKind::to_device}, {*this}, result);
  return result;
}

}  // namespace ndgc
