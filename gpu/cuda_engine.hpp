// The CUDA engine: every op of ops/engine.hpp on the GPU, the twin of
// src/ops/cpu/cpu_engine.hpp. Kernels in *_kernels.cu (twins by name of
// src/ops/cpu/*_kernels.cpp), matrix products on cuBLAS.
//
// Each entry point finds the device of its output (cuda_context.hpp), queues
// its kernels on that device's stream and returns without waiting, except
// to_host (the caller reads the result), and ops whose kernels validate
// values (integer division by zero, a one_hot index out of range), which
// synchronise to throw InvalidArgument. See Note [One stream per device].
// Thread-safe: no state of its own; per-thread cuBLAS handles.
#pragma once

#include "ops/engine.hpp"

namespace ndgc::cuda {

class CudaEngine final : public ops::Engine {
 public:
  bool begin_capture(Device device) override;
  std::unique_ptr<ops::CapturedGraph> end_capture(Device device) override;
  void fill(const ops::TensorView& out, double value) override;
  void arange(const ops::TensorView& out, double start, double step) override;
  void eye(const ops::TensorView& out) override;
  void random_uniform(const ops::TensorView& out, double low, double high, std::uint64_t seed,
                      std::uint64_t offset) override;
  void random_normal(const ops::TensorView& out, double mean, double stddev, std::uint64_t seed,
                     std::uint64_t offset) override;
  void copy(const ops::TensorView& in, const ops::TensorView& out) override;
  void unary(ops::Unary op, const ops::TensorView& in, const ops::TensorView& out) override;
  void binary(ops::Binary op, const ops::TensorView& a, const ops::TensorView& b,
              const ops::TensorView& out) override;
  void binary_scalar(ops::Binary op, const ops::TensorView& a, double s, bool scalar_left,
                     const ops::TensorView& out) override;
  void where(const ops::TensorView& condition, const ops::TensorView& a, const ops::TensorView& b,
             const ops::TensorView& out) override;
  void reduce(ops::Reduce op, const ops::TensorView& in, std::uint32_t axes, const ops::TensorView& out) override;
  void arg_reduce(bool max, const ops::TensorView& in, int axis, const ops::TensorView& out) override;
  void matmul(const ops::TensorView& a, const ops::TensorView& b, const ops::TensorView& out) override;
  bool matmul_add(const ops::TensorView& a, const ops::TensorView& b, const ops::TensorView& out) override;
  void softmax(const ops::TensorView& in, int axis, bool log, const ops::TensorView& out) override;
  void one_hot(const ops::TensorView& indices, std::int64_t depth, const ops::TensorView& out) override;
  void to_host(const ops::TensorView& in, const ops::TensorView& host_out) override;
  void from_host(const ops::TensorView& host_in, const ops::TensorView& out) override;
  bool adam_update(const ops::TensorView& weight, const ops::TensorView& grad, const ops::TensorView& mean,
                   const ops::TensorView& variance, const ops::AdamHyper& hyper) override;
  bool sgd_update(const ops::TensorView& weight, const ops::TensorView& grad, const ops::TensorView& momentum,
                  const ops::SgdHyper& hyper) override;
};

CudaEngine& cuda_engine() noexcept;

}  // namespace ndgc::cuda
