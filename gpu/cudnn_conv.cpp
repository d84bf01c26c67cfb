// conv2d and its gradients through cuDNN (cudnn_conv.hpp).
//
// Note [Convolutions through cuDNN]
// im2col writes kH·kW copies of every input pixel and col2im adds them back
// (Note [Convolution as GEMM] in src/ops/conv.cpp); on an H100 the CNN's
// im2col alone was the largest kernel of a training step, and the weight's
// gradient went through one product per image and a sum over them
// (perf/RESULTS.md, issue 43). cuDNN's convolutions read each pixel once, on
// tensor cores for 16 bits, as PyTorch's do. So the CUDA engine's conv2d
// and both its gradients call cuDNN's legacy convolution API first:
// - Deterministic algorithms only: of those cuDNN's heuristics rank
//   (cudnnGet*Algorithm_v7, no trial runs, nothing allocated), the first
//   whose determinism is CUDNN_DETERMINISTIC and whose workspace fits
//   kMaxWorkspace. A step gives the same bits on every run, as the engine's
//   own kernels do (no atomics). The choice depends on the shapes, so
//   unlike the CPU's a batch of images need not give each image the bits
//   it gets alone.
// - float32 runs without TF32 unless cuda::set_allow_tf32 (CUDNN_FMA_MATH,
//   as PyTorch's allow_tf32 = False), float64 in double, float16 and
//   bfloat16 on tensor cores with float32 accumulation (Engine::conv2d_16).
// - The workspace is a DeviceScratch: accounted, under the device's limits
//   and workspaces, freed stream-ordered, and served from the graph's pool
//   during a capture. The calls queue on the device's stream (the capture
//   stream while this thread captures); none synchronises, so a device graph
//   captures them.
// - Each thread keeps a cuDNN handle per device and its algorithm choices,
//   keyed by the geometry, up to kCapacity of them (oldest out).
// - Anything cuDNN cannot describe (a stride that is not positive, sizes past
//   its 32-bit limits, a pointer not 16-byte aligned), offers no
//   deterministic algorithm for, or declines when called (a "not supported"
//   status, before it runs anything) returns false, and the caller goes
//   through im2col. A library that cannot run here (cudnnCreate or a
//   sub-library failing, a driver or GPU it does not support) turns cuDNN
//   off for the process; cudnn_unavailable() says why. NDGC_GPU_CONV=im2col
//   turns it off too (to compare the two in one build). Any other failure is
//   a CudaError (OutOfMemory for an allocation) naming the call.
#include "cudnn_conv.hpp"

#include <array>
#include <atomic>
#include <climits>
#include <memory>
#include <mutex>
#include <vector>

#include <cudnn.h>
#include <fmt/format.h>

#include "cuda_check.hpp"
#include "cuda_context.hpp"
#include "engine_support.hpp"
#include "ndgc/error.hpp"
#include "support/options.hpp"

namespace ndgc::cuda {

using ops::TensorView;
using ops::Window2d;

namespace {

constexpr std::size_t kCapacity = 64;                       // choices kept per thread
constexpr std::size_t kMaxWorkspace = std::size_t(256) << 20;  // bytes an algorithm may ask for

std::atomic<std::uint64_t> g_convolutions{0};
std::atomic<bool> g_off{false};
std::mutex g_why_mu;
std::string g_why;  // guarded by g_why_mu

void turn_off(const std::string& why) {
  std::lock_guard lock(g_why_mu);
  if (g_why.empty()) g_why = why;
  g_off.store(true, std::memory_order_relaxed);
}

[[noreturn]] void fail(cudnnStatus_t status, const char* call) {
  const std::string what = fmt::format("cuDNN: {} failed: {}", call, cudnnGetErrorString(status));
  if (status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
      status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    throw OutOfMemory(what, 0, 0, 0);
  throw CudaError(what);
}

#define CUDNN_CHECK(call)                                          \
  do {                                                             \
    cudnnStatus_t ndgc_status_ = (call);                           \
    if (ndgc_status_ != CUDNN_STATUS_SUCCESS) fail(ndgc_status_, #call); \
  } while (0)

// A status that means the library itself cannot run here: its libraries
// missing or of other versions, a driver, runtime or GPU it does not support.
bool unloadable(cudnnStatus_t s) {
  switch (s) {
    case CUDNN_STATUS_NOT_INITIALIZED:
    case CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH:
    case CUDNN_STATUS_LICENSE_ERROR:
    case CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED:
    case CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER:
    case CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART:
    case CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH:
    case CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING:
    case CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE: return true;
    default: return false;
  }
}

// A status by which cuDNN declines the call before it runs anything.
bool declined(cudnnStatus_t s) {
  return CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED || s == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER;
}

// ---- RAII descriptors ------------------------------------------------------------
// A descriptor, or its creation's failure in status().
template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class Descriptor {
 public:
  Descriptor() : status_(Create(&d_)) {}
  ~Descriptor() {
    if (status_ == CUDNN_STATUS_SUCCESS) Destroy(d_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  T get() const noexcept { return d_; }
  cudnnStatus_t status() const noexcept { return status_; }

 private:
  T d_ = nullptr;
  cudnnStatus_t status_;
};
using TensorDesc = Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc = Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;

struct HandleDeleter {
  void operator()(cudnnContext* h) const noexcept { cudnnDestroy(h); }
};
using UniqueHandle = std::unique_ptr<cudnnContext, HandleDeleter>;

// ---- what a call runs on ---------------------------------------------------------
enum class Pass : int { forward, data, weight };

// A call's geometry: the key of its algorithm choice.
struct Key {
  Pass pass = Pass::forward;
  DataType dtype = DataType::float32;
  bool tf32 = false;
  std::int64_t x[4] = {}, x_strides[4] = {}, weight[4] = {}, y[4] = {};
  std::int64_t kernel[2] = {}, stride[2] = {}, padding[2] = {}, dilation[2] = {}, groups = 1;
  bool operator==(const Key&) const = default;
};

struct Choice {
  bool usable = false;
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  std::size_t bytes = 0;
};

struct ThreadCudnn {
  std::array<UniqueHandle, kMaxGpus> handles;
  std::vector<std::pair<Key, Choice>> choices;  // oldest first
};
ThreadCudnn& mine() {
  thread_local ThreadCudnn t;
  return t;
}

// This thread's handle on `on.device`, on its stream; null when cuDNN cannot run.
cudnnHandle_t handle(const On& on) {
  if (g_off.load(std::memory_order_relaxed)) return nullptr;
  static const bool wanted = support::options().gpu_conv == "cudnn";  // read once, not per convolution
  if (!wanted) {
    turn_off("NDGC_GPU_CONV=im2col turned it off");
    return nullptr;
  }
  UniqueHandle& h = mine().handles[std::size_t(on.device)];
  if (!h) {
    cudnnHandle_t fresh = nullptr;
    const cudnnStatus_t s = cudnnCreate(&fresh);
    if (s != CUDNN_STATUS_SUCCESS) {
      turn_off(fmt::format("cudnnCreate: {}", cudnnGetErrorString(s)));
      return nullptr;
    }
    h.reset(fresh);
  }
  CUDNN_CHECK(cudnnSetStream(h.get(), on.stream));
  return h.get();
}

bool data_type(DataType t, cudnnDataType_t& data, cudnnDataType_t& compute) {
  switch (t) {
    case DataType::float32: data = compute = CUDNN_DATA_FLOAT; return true;
    case DataType::float64: data = compute = CUDNN_DATA_DOUBLE; return true;
    case DataType::float16: data = CUDNN_DATA_HALF, compute = CUDNN_DATA_FLOAT; return true;
    case DataType::bfloat16: data = CUDNN_DATA_BFLOAT16, compute = CUDNN_DATA_FLOAT; return true;
    default: return false;
  }
}

bool fits_int(std::int64_t v) { return v >= 0 && v <= INT_MAX; }

// A 4-D view as cuDNN's: positive strides on every axis longer than one (an
// axis of one gets its dense stride), sizes and strides in int, fewer than
// 2^31 elements, and its data 16-byte aligned.
bool tensor_fits(const TensorView& v, int strides[4]) {
  if (v.rank != 4 || v.size() >= (std::int64_t(1) << 31) || reinterpret_cast<std::uintptr_t>(v.data) % 16 != 0)
    return false;
  std::int64_t dense = 1;
  for (int i = 3; i >= 0; --i) {
    const std::int64_t s = v.shape[i] == 1 ? dense : v.strides[i];
    if (v.shape[i] < 1 || !fits_int(v.shape[i]) || s < 1 || !fits_int(s)) return false;
    strides[i] = int(s);
    dense *= v.shape[i];
  }
  return true;
}

// The descriptors of one call: `x` the convolution's input (or its
// gradient), `weight` the filter (or its gradient), `y` the output (or g).
struct Described {
  TensorDesc x, y;
  FilterDesc weight;
  ConvDesc conv;
  // The first failure to create one, or success.
  cudnnStatus_t status() const noexcept {
    for (cudnnStatus_t s : {x.status(), y.status(), weight.status(), conv.status()})
      if (s != CUDNN_STATUS_SUCCESS) return s;
    return CUDNN_STATUS_SUCCESS;
  }
};

// Fills `d` and `key`; false when cuDNN cannot describe the views.
bool describe(Pass pass, const TensorView& x, const TensorView& weight, const Window2d& w, const TensorView& y,
              Described& d, Key& key) {
  if (const cudnnStatus_t s = d.status(); s != CUDNN_STATUS_SUCCESS) {
    if (unloadable(s)) turn_off(fmt::format("cuDNN's descriptors: {}", cudnnGetErrorString(s)));
    return false;
  }
  cudnnDataType_t data, compute;
  int xs[4], ys[4];
  if (x.dtype != weight.dtype || x.dtype != y.dtype || !data_type(x.dtype, data, compute) ||
      !weight.is_contiguous() || !y.is_contiguous() || weight.rank != 4 ||
      reinterpret_cast<std::uintptr_t>(weight.data) % 16 != 0 || !tensor_fits(x, xs) || !tensor_fits(y, ys))
    return false;
  for (int i = 0; i < 4; ++i)
    if (!fits_int(weight.shape[i]) || weight.shape[i] < 1) return false;
  for (int a = 0; a < 2; ++a)
    if (!fits_int(w.kernel[a]) || !fits_int(w.stride[a]) || !fits_int(w.padding[a]) || !fits_int(w.dilation[a]))
      return false;
  if (!fits_int(w.groups)) return false;
  const auto i = [](std::int64_t v) { return int(v); };
  if (cudnnSetTensor4dDescriptorEx(d.x.get(), data, i(x.shape[0]), i(x.shape[1]), i(x.shape[2]), i(x.shape[3]),
                                   xs[0], xs[1], xs[2], xs[3]) != CUDNN_STATUS_SUCCESS ||
      cudnnSetTensor4dDescriptorEx(d.y.get(), data, i(y.shape[0]), i(y.shape[1]), i(y.shape[2]), i(y.shape[3]),
                                   ys[0], ys[1], ys[2], ys[3]) != CUDNN_STATUS_SUCCESS ||
      cudnnSetFilter4dDescriptor(d.weight.get(), data, CUDNN_TENSOR_NCHW, i(weight.shape[0]), i(weight.shape[1]),
                                 i(weight.shape[2]), i(weight.shape[3])) != CUDNN_STATUS_SUCCESS ||
      cudnnSetConvolution2dDescriptor(d.conv.get(), i(w.padding[0]), i(w.padding[1]), i(w.stride[0]),
                                      i(w.stride[1]), i(w.dilation[0]), i(w.dilation[1]), CUDNN_CROSS_CORRELATION,
                                      compute) != CUDNN_STATUS_SUCCESS ||
      cudnnSetConvolutionGroupCount(d.conv.get(), i(w.groups)) != CUDNN_STATUS_SUCCESS)
    return false;
  // cuDNN's idea of the output must be ours.
  int n = 0, c = 0, h = 0, wd = 0;
  if (cudnnGetConvolution2dForwardOutputDim(d.conv.get(), d.x.get(), d.weight.get(), &n, &c, &h, &wd) !=
          CUDNN_STATUS_SUCCESS ||
      n != y.shape[0] || c != y.shape[1] || h != y.shape[2] || wd != y.shape[3])
    return false;
  key.pass = pass;
  key.dtype = x.dtype;
  key.tf32 = allow_tf32();
  for (int a = 0; a < 4; ++a) {
    key.x[a] = x.shape[a], key.x_strides[a] = xs[a], key.weight[a] = weight.shape[a], key.y[a] = y.shape[a];
  }
  for (int a = 0; a < 2; ++a) {
    key.kernel[a] = w.kernel[a], key.stride[a] = w.stride[a], key.padding[a] = w.padding[a];
    key.dilation[a] = w.dilation[a];
  }
  key.groups = w.groups;
  return true;
}

cudnnMathType_t math_for(DataType t) {
  if (t == DataType::float16 || t == DataType::bfloat16) return CUDNN_TENSOR_OP_MATH;
  if (t == DataType::float32 && !allow_tf32()) return CUDNN_FMA_MATH;
  return CUDNN_DEFAULT_MATH;
}

// The heuristics' ranking for `pass`, as (algo, status, determinism, math) rows.
struct Ranked {
  int algo;
  cudnnStatus_t status;
  cudnnDeterminism_t determinism;
  cudnnMathType_t math;
};

template <class Perf>
std::vector<Ranked> ranked_rows(const Perf* perf, int count) {
  std::vector<Ranked> rows;
  for (int i = 0; i < count; ++i) rows.push_back({int(perf[i].algo), perf[i].status, perf[i].determinism, perf[i].mathType});
  return rows;
}

// cuDNN's ranking for the call; empty when it has none. Turns cuDNN off
// when the query shows that its library cannot load.
std::vector<Ranked> rank(cudnnHandle_t h, Pass pass, const Described& d) {
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  int count = 0;
  std::vector<Ranked> rows;
  if (pass == Pass::forward) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    s = cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.get(), d.weight.get(), d.conv.get(), d.y.get(),
                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf);
    if (s == CUDNN_STATUS_SUCCESS) rows = ranked_rows(perf, count);
  } else if (pass == Pass::data) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    s = cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.weight.get(), d.y.get(), d.conv.get(), d.x.get(),
                                                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf);
    if (s == CUDNN_STATUS_SUCCESS) rows = ranked_rows(perf, count);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    s = cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.get(), d.y.get(), d.conv.get(), d.weight.get(),
                                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf);
    if (s == CUDNN_STATUS_SUCCESS) rows = ranked_rows(perf, count);
  }
  if (unloadable(s)) turn_off(fmt::format("cuDNN's algorithm query: {}", cudnnGetErrorString(s)));
  return rows;
}

// The workspace `algo` needs, or false when cuDNN refuses it for the call.
bool workspace(cudnnHandle_t h, Pass pass, const Described& d, int algo, std::size_t& bytes) {
  cudnnStatus_t s;
  if (pass == Pass::forward)
    s = cudnnGetConvolutionForwardWorkspaceSize(h, d.x.get(), d.weight.get(), d.conv.get(), d.y.get(),
                                                cudnnConvolutionFwdAlgo_t(algo), &bytes);
  else if (pass == Pass::data)
    s = cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.weight.get(), d.y.get(), d.conv.get(), d.x.get(),
                                                     cudnnConvolutionBwdDataAlgo_t(algo), &bytes);
  else
    s = cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x.get(), d.y.get(), d.conv.get(), d.weight.get(),
                                                       cudnnConvolutionBwdFilterAlgo_t(algo), &bytes);
  return s == CUDNN_STATUS_SUCCESS && bytes <= kMaxWorkspace;
}

// The first deterministic algorithm of cuDNN's ranking whose workspace fits.
Choice choose(cudnnHandle_t h, Pass pass, const Described& d, DataType dtype) {
  const cudnnMathType_t wanted = math_for(dtype);
  CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv.get(), wanted));
  for (const Ranked& r : rank(h, pass, d)) {
    if (r.status != CUDNN_STATUS_SUCCESS || r.determinism != CUDNN_DETERMINISTIC) continue;
    // Never TF32 for float32 unless allowed: FMA math rules it out.
    if (wanted == CUDNN_FMA_MATH && r.math != CUDNN_FMA_MATH && r.math != CUDNN_DEFAULT_MATH) continue;
    const cudnnMathType_t math = wanted == CUDNN_FMA_MATH ? wanted : r.math;
    CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv.get(), math));
    Choice c{.usable = true, .algo = r.algo, .math = math};
    if (workspace(h, pass, d, r.algo, c.bytes)) return c;
  }
  return {};
}

// This thread's choice for `key`, made once.
Choice& choice_for(cudnnHandle_t h, const Key& key, const Described& d) {
  auto& choices = mine().choices;
  for (auto& [k, c] : choices)
    if (k == key) {
      if (c.usable) CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv.get(), c.math));
      return c;
    }
  const Choice c = choose(h, key.pass, d, key.dtype);
  if (choices.size() == kCapacity) choices.erase(choices.begin());
  choices.emplace_back(key, c);
  return choices.back().second;
}

// One convolution pass: false where cuDNN does not serve it.
bool run(Pass pass, const TensorView& x, const TensorView& weight, const Window2d& w, const TensorView& y) {
  if (g_off.load(std::memory_order_relaxed)) return false;
  const TensorView& out = pass == Pass::forward ? y : pass == Pass::data ? x : weight;
  const On on(out);
  cudnnHandle_t h = handle(on);
  if (!h) return false;
  Described d;
  Key key;
  if (!describe(pass, x, weight, w, y, d, key)) return false;
  Choice& chosen = choice_for(h, key, d);
  if (!chosen.usable) return false;
  const Choice c = chosen;
  std::unique_ptr<DeviceScratch> space;
  if (c.bytes > 0) space = std::make_unique<DeviceScratch>(on.device, c.bytes);
  void* ws = space ? space->get() : nullptr;
  const double one_d = 1.0, zero_d = 0.0;
  const float one_f = 1.0f, zero_f = 0.0f;
  const bool dbl = x.dtype == DataType::float64;
  const void* one = dbl ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = dbl ? static_cast<const void*>(&zero_d) : &zero_f;
  cudnnStatus_t s;
  const char* call;
  if (pass == Pass::forward) {
    call = "cudnnConvolutionForward";
    s = cudnnConvolutionForward(h, one, d.x.get(), x.data, d.weight.get(), weight.data, d.conv.get(),
                                cudnnConvolutionFwdAlgo_t(c.algo), ws, c.bytes, zero, d.y.get(), y.data);
  } else if (pass == Pass::data) {
    call = "cudnnConvolutionBackwardData";
    s = cudnnConvolutionBackwardData(h, one, d.weight.get(), weight.data, d.y.get(), y.data, d.conv.get(),
                                     cudnnConvolutionBwdDataAlgo_t(c.algo), ws, c.bytes, zero, d.x.get(), x.data);
  } else {
    call = "cudnnConvolutionBackwardFilter";
    s = cudnnConvolutionBackwardFilter(h, one, d.x.get(), x.data, d.y.get(), y.data, d.conv.get(),
                                       cudnnConvolutionBwdFilterAlgo_t(c.algo), ws, c.bytes, zero, d.weight.get(),
                                       weight.data);
  }
  if (s != CUDNN_STATUS_SUCCESS && (unloadable(s) || declined(s))) {
    // Refused before anything ran: this geometry goes to im2col from now on.
    if (unloadable(s)) turn_off(fmt::format("{}: {}", call, cudnnGetErrorString(s)));
    chosen.usable = false;
    return false;
  }
  if (s != CUDNN_STATUS_SUCCESS) fail(s, call);
  g_convolutions.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace

bool cudnn_conv2d(const TensorView& x, const TensorView& weight, const Window2d& w, const TensorView& y) {
  return run(Pass::forward, x, weight, w, y);
}

bool cudnn_conv2d_backward_data(const TensorView& g, const TensorView& weight, const Window2d& w,
                                const TensorView& dx) {
  return run(Pass::data, dx, weight, w, g);
}

bool cudnn_conv2d_backward_weight(const TensorView& x, const TensorView& g, const Window2d& w,
                                  const TensorView& dweight) {
  return run(Pass::weight, x, dweight, w, g);
}

bool cudnn_describes(const TensorView& x, const TensorView& weight, const Window2d& w, const TensorView& y) {
  Described d;
  Key key;
  return describe(Pass::forward, x, weight, w, y, d, key);
}

std::uint64_t cudnn_convolutions() noexcept { return g_convolutions.load(std::memory_order_relaxed); }

std::size_t cudnn_version() noexcept { return cudnnGetVersion(); }

std::string cudnn_unavailable() noexcept {
  std::lock_guard lock(g_why_mu);
  return g_why;
}

}  // namespace ndgc::cuda
