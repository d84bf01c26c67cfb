// to_device (of an array, of a list) and copy_between (ops/transfer.hpp):
// copies between devices through the engines' transfers.
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
#include "ndgc/ndlist.hpp"
#include "ops/op_support.hpp"
#include "ops/record.hpp"
#include "ops/transfer.hpp"
#include "support/gpu_probe.hpp"

namespace ndgc {

using namespace ndgc::ops;

namespace ops {

void copy_between(const TensorView& in, Device from, const TensorView& out, Device to) {
  if (out.size() == 0) return;
  if (from == to) {
    engine(to).copy(in, out);
  } else if (from.is_cpu()) {
    engine(to).from_host(in, out);
  } else if (to.is_cpu()) {
    engine(from).to_host(in, out);
  } else {
    std::vector<unsigned char> host(std::size_t(in.size()) * size_of(in.dtype));
    TensorView staged = in;  // in's shape, contiguous, in host memory
    staged.data = host.data();
    std::int64_t stride = 1;
    for (int i = in.rank - 1; i >= 0; --i) {
      staged.strides[i] = stride;
      stride *= in.shape[i];
    }
    engine(from).to_host(in, staged);
    engine(to).from_host(staged, out);
  }
}

}  // namespace ops

NDArray NDArray::to_device(Device device, Site site) const {
  detail::enter();
  Pinned a(*this, "to_device");
  support::check_device(device, "to_device");
  auto out = new_output(a->shape, a->dtype, device, site, "to_device");
  copy_between(view_of(*a), a->device, view_of(*out), device);
  NDArray result = publish_like(std::move(out), *a, "to_device");
  record({.kind = OpKind::to_device}, {*this}, result);
  return result;
}

// DJL's NDList.toDevice(device, copy).
NDList NDList::to_device(Device device, bool copy, Site site) const {
  NDList out;
  for (const NDArray& a : *this) out.push_back(!copy && a.device() == device ? a : a.to_device(device, site));
  return out;
}

}  // namespace ndgc
