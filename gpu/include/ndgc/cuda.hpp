// The CUDA engine's own switches (linked with ndgc::cuda).
//
//   target_link_libraries(app PRIVATE ndgc::cuda);   // registers the engine
//   if (ndgc::gpu_count() > 0) {
//     ndgc::cuda::set_allow_tf32(true);   // faster float32 matmul, ~10-bit mantissa products
//     NDManager g = NDManager::new_base_manager("gpu", Device::gpu(0));
//   }
//
// TF32 is off by default so that float32 products match the CPU's within
// float tolerance, as in PyTorch (torch.backends.cuda.matmul.allow_tf32 = False).
#pragma once

#include "ndgc/device.hpp"

namespace ndgc::cuda {

bool allow_tf32() noexcept;
void set_allow_tf32(bool on) noexcept;
// Waits for every op queued on `device` (benchmarks; reads synchronise by themselves).
void synchronize(Device device);

}  // namespace ndgc::cuda
