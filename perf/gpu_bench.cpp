// GPU benchmarks (issue 12), built only with the CUDA engine; each pairs an
// ndgc path with the raw CUDA call it wraps, measured in the same run:
//   - device alloc+free through ndgc's allocator vs cudaMalloc+cudaFree;
//   - a large element-wise add vs a device-to-device copy of the same bytes
//     (bandwidth: bytes moved per second, reported as a counter);
//   - a 4096² float32 matmul through ndgc vs the same cublasSgemm made directly;
//   - 4096² bfloat16 and float16 matmuls (float32 accumulation) through ndgc
//     vs the same cublasGemmEx made directly (issue 43: aim within 5 %);
//   - host overhead of a small op (launch included, synchronised every 256).
//
//   build/perf/bench_gpu --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Without a usable device every benchmark skips with the probe's reason.
#include <benchmark/benchmark.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include <ndgc/cuda.hpp>
#include <ndgc/ndgc.hpp>

#include "memory/allocator.hpp"
#include "support/gpu_probe.hpp"

using namespace ndgc;

namespace {

bool need_gpu(benchmark::State& state) {
  if (gpu_count() > 0) return true;
  state.SkipWithError(("no usable CUDA device: " + support::gpu_unavailable_reason()).c_str());
  return false;
}

void BM_AllocFreeNdgc(benchmark::State& state) {
  if (!need_gpu(state)) return;
  memory::DeviceAllocator& a = memory::allocator(Device::gpu(0));
  const auto bytes = std::size_t(state.range(0));
  for (auto _ : state) {
    void* p = a.allocate(bytes);
    a.deallocate(p, bytes);
  }
}
BENCHMARK(BM_AllocFreeNdgc)->Arg(4096)->Arg(1 << 20);

void BM_AllocFreeCuda(benchmark::State& state) {
  if (!need_gpu(state)) return;
  const auto bytes = std::size_t(state.range(0));
  for (auto _ : state) {
    void* p = nullptr;
    cudaMalloc(&p, bytes);
    cudaFree(p);
  }
}
BENCHMARK(BM_AllocFreeCuda)->Arg(4096)->Arg(1 << 20);

constexpr std::int64_t kBig = std::int64_t(1) << 26;  // 64 Mi float32 = 256 MiB per array

void BM_AddLarge(benchmark::State& state) {
  if (!need_gpu(state)) return;
  NDManager g = NDManager::new_base_manager("bench", Device::gpu(0));
  NDArray a = g.ones({kBig}), b = g.ones({kBig});
  for (auto _ : state) {
    NDScope scope;
    NDArray c = a.add(b);
    cuda::synchronize(Device::gpu(0));
  }
  state.counters["bytes_per_s"] =
      benchmark::Counter(double(3 * kBig * 4) * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AddLarge)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CopyDeviceToDevice(benchmark::State& state) {
  if (!need_gpu(state)) return;
  void *src = nullptr, *dst = nullptr;
  cudaMalloc(&src, std::size_t(kBig) * 4);
  cudaMalloc(&dst, std::size_t(kBig) * 4);
  for (auto _ : state) {
    cudaMemcpy(dst, src, std::size_t(kBig) * 4, cudaMemcpyDeviceToDevice);
    cudaDeviceSynchronize();
  }
  state.counters["bytes_per_s"] =
      benchmark::Counter(double(2 * kBig * 4) * double(state.iterations()), benchmark::Counter::kIsRate);
  cudaFree(src);
  cudaFree(dst);
}
BENCHMARK(BM_CopyDeviceToDevice)->Unit(benchmark::kMillisecond)->UseRealTime();

constexpr int kN = 4096;

void BM_MatmulNdgc(benchmark::State& state) {
  if (!need_gpu(state)) return;
  NDManager g = NDManager::new_base_manager("bench", Device::gpu(0));
  NDArray a = g.random_uniform({kN, kN}), b = g.random_uniform({kN, kN});
  for (auto _ : state) {
    NDScope scope;
    NDArray c = a.matmul(b);
    cuda::synchronize(Device::gpu(0));
  }
}
BENCHMARK(BM_MatmulNdgc)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MatmulCublas(benchmark::State& state) {
  if (!need_gpu(state)) return;
  void *pa = nullptr, *pb = nullptr, *pc = nullptr;
  const std::size_t bytes = std::size_t(kN) * kN * 4;
  cudaMalloc(&pa, bytes);
  cudaMalloc(&pb, bytes);
  cudaMalloc(&pc, bytes);
  auto *a = static_cast<float*>(pa), *b = static_cast<float*>(pb), *c = static_cast<float*>(pc);
  // The same kind of operands as BM_MatmulNdgc's: tensor cores run faster on zeros.
  {
    NDManager host = NDManager::new_base_manager("bench operands");
    const std::vector<float> values = host.random_uniform({kN, kN}).to_vector<float>();
    cudaMemcpy(a, values.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(b, values.data(), bytes, cudaMemcpyHostToDevice);
  }
  cublasHandle_t h = nullptr;
  cublasCreate(&h);
  const float one = 1, zero = 0;
  for (auto _ : state) {
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, b, kN, a, kN, &zero, c, kN);
    cudaDeviceSynchronize();
  }
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
}
BENCHMARK(BM_MatmulCublas)->Unit(benchmark::kMillisecond)->UseRealTime();

// 16-bit products: Arg(0) bfloat16, Arg(1) float16.
DataType half_of(const benchmark::State& state) {
  return state.range(0) == 0 ? DataType::bfloat16 : DataType::float16;
}

void BM_MatmulNdgc16(benchmark::State& state) {
  if (!need_gpu(state)) return;
  NDManager g = NDManager::new_base_manager("bench", Device::gpu(0));
  const DataType t = half_of(state);
  NDArray a = g.random_uniform({kN, kN}).to_type(t), b = g.random_uniform({kN, kN}).to_type(t);
  for (auto _ : state) {
    NDScope scope;
    NDArray c = a.matmul(b);
    cuda::synchronize(Device::gpu(0));
  }
  state.SetLabel(std::string(to_string(t)));
}
BENCHMARK(BM_MatmulNdgc16)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MatmulCublas16(benchmark::State& state) {
  if (!need_gpu(state)) return;
  const DataType t = half_of(state);
  const cudaDataType_t type = t == DataType::bfloat16 ? CUDA_R_16BF : CUDA_R_16F;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  const std::size_t bytes = std::size_t(kN) * kN * 2;
  cudaMalloc(&a, bytes);
  cudaMalloc(&b, bytes);
  cudaMalloc(&c, bytes);
  {  // BM_MatmulNdgc16's kind of operands, their 16-bit patterns copied over
    NDManager host = NDManager::new_base_manager("bench operands");
    const NDArray values = host.random_uniform({kN, kN}).to_type(t);
    auto copy_over = [&](const auto& v) {
      cudaMemcpy(a, v.data(), bytes, cudaMemcpyHostToDevice);
      cudaMemcpy(b, v.data(), bytes, cudaMemcpyHostToDevice);
    };
    if (t == DataType::bfloat16) copy_over(values.to_vector<bfloat16>());
    else copy_over(values.to_vector<float16>());
  }
  cublasHandle_t h = nullptr;
  cublasCreate(&h);
  const float one = 1, zero = 0;
  for (auto _ : state) {
    cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, b, type, kN, a, type, kN, &zero, c, type, kN,
                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    cudaDeviceSynchronize();
  }
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  state.SetLabel(std::string(to_string(t)));
}
BENCHMARK(BM_MatmulCublas16)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SmallOpOverhead(benchmark::State& state) {
  if (!need_gpu(state)) return;
  NDManager g = NDManager::new_base_manager("bench", Device::gpu(0));
  NDArray a = g.ones({64, 64});
  std::int64_t i = 0;
  for (auto _ : state) {
    NDScope scope;
    NDArray c = a.add(a);
    if (++i % 256 == 0) cuda::synchronize(Device::gpu(0));
  }
  cuda::synchronize(Device::gpu(0));
}
BENCHMARK(BM_SmallOpOverhead);

}  // namespace

BENCHMARK_MAIN();
