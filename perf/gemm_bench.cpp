// float32 products at one thread, for the shapes ndgc's models make (issue
// 40): ndgc's matmul as shipped (fixed blocks, each one oneDNN matmul call
// where the build has it, else one Eigen GEMM) against a bare Eigen product,
// OpenBLAS (the serial build), BLIS (the serial build, native API) and
// oneDNN's `dnnl_sgemm` (one unsplit call), each where found (tools/bootstrap
// --perf installs them). GFLOP/s per benchmark.
//
//   build/perf/bench_gemm --benchmark_filter='square_2048'
//
// OpenBLAS reads OPENBLAS_CORETYPE, which this machine's environment sets
// to Haswell (AVX2 kernels): time it at its best with perf/peer_at_best.sh,
// which unsets it. The serial libraries are linked by their own paths, so
// the alternatives (pthread, OpenMP) that libopenblas.so.0 may point to are
// not used.
#include <benchmark/benchmark.h>

#include <Eigen/Core>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <ndgc/ndgc.hpp>

#if NDGC_GEMM_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif
#if NDGC_GEMM_BLIS
#include <blis.h>
#endif
#if NDGC_GEMM_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#endif

namespace {

struct Product {
  const char* name;
  std::int64_t m, n, k;
};

// The wide MLP (784-2048-2048-10, batch 512): forward, the weight gradient
// and the input gradient of the middle layer; the CNN's second conv as
// im2col products (8 images a chunk); the LSTM's gates; resnet18's 3x3
// convolutions at 224 pixels as products (out channels × pixels × C·9).
constexpr Product kProducts[] = {
    {"mlp_wide_fwd1", 512, 2048, 784},  {"mlp_wide_fwd2", 512, 2048, 2048}, {"mlp_wide_dW2", 2048, 2048, 512},
    {"mlp_wide_out", 512, 10, 2048},    {"cnn_conv2", 64, 1568, 288},      {"cnn_conv2_dW", 64, 288, 1568},
    {"cnn_conv2_dcol", 288, 1568, 64},  {"lstm_gates", 32, 512, 128},      {"lstm_projection", 896, 512, 28},
    {"resnet18_layer1", 64, 3136, 576}, {"resnet18_layer2", 128, 784, 1152}, {"resnet18_layer3", 256, 196, 2304},
    {"resnet18_layer4", 512, 49, 4608}, {"square_2048", 2048, 2048, 2048},
};

std::vector<float> random_values(std::int64_t count) {
  std::mt19937 g(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& x : v) x = u(g);
  return v;
}

void report(benchmark::State& state, const Product& p) {
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * double(p.m * p.n * p.k), benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

void BM_ndgc(benchmark::State& state, Product p) {
  ndgc::set_num_threads(1);
  ndgc::NDManager m = ndgc::NDManager::new_base_manager("gemm");
  ndgc::NDArray a = m.create(random_values(p.m * p.k), ndgc::Shape{p.m, p.k});
  ndgc::NDArray b = m.create(random_values(p.k * p.n), ndgc::Shape{p.k, p.n});
  for (auto _ : state) {
    ndgc::NDScope scope;  // the product closes at the end of each iteration
    ndgc::NDArray c = a.matmul(b);
    benchmark::DoNotOptimize(c);
  }
  report(state, p);
}

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void BM_eigen(benchmark::State& state, Product p) {
  Eigen::setNbThreads(1);
  const Matrix a = Eigen::Map<const Matrix>(random_values(p.m * p.k).data(), p.m, p.k);
  const Matrix b = Eigen::Map<const Matrix>(random_values(p.k * p.n).data(), p.k, p.n);
  Matrix c(p.m, p.n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  report(state, p);
}

// A library's row-major sgemm: c = a × b.
template <class Gemm>
void run_library(benchmark::State& state, Product p, Gemm&& gemm) {
  const std::vector<float> a = random_values(p.m * p.k), b = random_values(p.k * p.n);
  std::vector<float> c(std::size_t(p.m * p.n));
  for (auto _ : state) {
    gemm(a.data(), b.data(), c.data());
    benchmark::DoNotOptimize(c.data());
  }
  report(state, p);
}

#if NDGC_GEMM_OPENBLAS
void BM_openblas(benchmark::State& state, Product p) {
  openblas_set_num_threads(1);
  run_library(state, p, [&](const float* a, const float* b, float* c) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(p.m), int(p.n), int(p.k), 1.0f, a, int(p.k), b,
                int(p.n), 0.0f, c, int(p.n));
  });
}
#endif
#if NDGC_GEMM_BLIS
void BM_blis(benchmark::State& state, Product p) {
  run_library(state, p, [&](const float* a, const float* b, float* c) {
    float one = 1, zero = 0;
    bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, p.m, p.n, p.k, &one, const_cast<float*>(a), p.k, 1,
              const_cast<float*>(b), p.n, 1, &zero, c, p.n, 1);
  });
}
#endif
#if NDGC_GEMM_DNNL
void BM_onednn(benchmark::State& state, Product p) {
  omp_set_num_threads(1);
  run_library(state, p, [&](const float* a, const float* b, float* c) {
    dnnl_sgemm('N', 'N', p.m, p.n, p.k, 1.0f, a, p.k, b, p.n, 0.0f, c, p.n);
  });
}
#endif

const bool kRegistered = [] {
  for (const Product& p : kProducts) {
    const std::string name = p.name;
    benchmark::RegisterBenchmark((name + "/ndgc").c_str(), BM_ndgc, p);
    benchmark::RegisterBenchmark((name + "/eigen").c_str(), BM_eigen, p);
#if NDGC_GEMM_OPENBLAS
    benchmark::RegisterBenchmark((name + "/openblas").c_str(), BM_openblas, p);
#endif
#if NDGC_GEMM_BLIS
    benchmark::RegisterBenchmark((name + "/blis").c_str(), BM_blis, p);
#endif
#if NDGC_GEMM_DNNL
    benchmark::RegisterBenchmark((name + "/onednn").c_str(), BM_onednn, p);
#endif
  }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
