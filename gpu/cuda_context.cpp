// The probe, the per-device streams and the per-thread state of cuda_context.hpp.
//
// The probe asks cudaGetDeviceCount once; its first call also registers the
// engine and one allocator per device (cuda_registration.cpp), so a program
// that links ndgc::cuda but never touches a GPU never initialises CUDA.
#include "cuda_context.hpp"

#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "cuda_check.hpp"
#include "memory/allocator.hpp"
#include "ndgc/cuda.hpp"
#include "ndgc/error.hpp"

namespace ndgc::cuda {

void register_devices(int count);  // cuda_registration.cpp

namespace {

struct Probe {
  int count = 0;
  std::string why;
};

const Probe& probe() noexcept {
  static const Probe p = [] {
    Probe r;
    int n = 0;
    cudaError_t status = cudaGetDeviceCount(&n);
    if (status != cudaSuccess) {
      r.why = fmt::format("cudaGetDeviceCount: {}", cudaGetErrorString(status));
      cudaGetLastError();
      return r;
    }
    if (n == 0) {
      r.why = "cudaGetDeviceCount: 0 devices";
      return r;
    }
    r.count = n < kMaxGpus ? n : kMaxGpus;
    try {
      register_devices(r.count);
    } catch (const std::exception& e) {
      r.count = 0;
      r.why = fmt::format("the CUDA engine could not start: {}", e.what());
    }
    return r;
  }();
  return p;
}

std::array<std::once_flag, kMaxGpus> g_stream_once;
std::array<cudaStream_t, kMaxGpus> g_streams{};
std::atomic<bool> g_tf32{false};

}  // namespace

UniqueEvent make_event(bool timing) {
  cudaEvent_t e = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return UniqueEvent(e);
}

int device_count() noexcept { return probe().count; }
std::string why_no_device() noexcept { return probe().why; }

namespace {
thread_local std::array<cudaStream_t, kMaxGpus> t_capture_stream{};  // see Note [Capture stream]
}  // namespace

bool capturing(int device) noexcept { return t_capture_stream[std::size_t(device)] != nullptr; }

cudaStream_t stream(int device) {
  if (cudaStream_t s = t_capture_stream[std::size_t(device)]) return s;
  std::call_once(g_stream_once[std::size_t(device)], [device] {
    int previous = 0;
    CUDA_CHECK(cudaGetDevice(&previous));
    CUDA_CHECK(cudaSetDevice(device));
    cudaStream_t s = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    // Kept for the process: see Note [One stream per device].
    g_streams[std::size_t(device)] = UniqueStream(s).release();
    CUDA_CHECK(cudaSetDevice(previous));
  });
  return g_streams[std::size_t(device)];
}

int device_of(const void* ptr) {
  if (device_count() <= 1 || !ptr) return 0;
  cudaPointerAttributes attributes{};
  CUDA_CHECK(cudaPointerGetAttributes(&attributes, ptr));
  return attributes.device;
}

void select(int device) {
  if (device_count() > 1) CUDA_CHECK(cudaSetDevice(device));
}

ThreadState& thread_state(int device) {
  thread_local std::array<std::unique_ptr<ThreadState>, kMaxGpus> states;
  std::unique_ptr<ThreadState>& s = states[std::size_t(device)];
  if (!s) {
    auto fresh = std::make_unique<ThreadState>();
    select(device);
    cublasHandle_t h = nullptr;
    CUBLAS_CHECK(cublasCreate(&h));
    fresh->blas.reset(h);
    CUBLAS_CHECK(cublasSetStream(h, stream(device)));
    fresh->staging_free = make_event();
    void* slot = nullptr;
    CUDA_CHECK(cudaMalloc(&slot, 2 * sizeof(std::int64_t)));
    fresh->error_slot.reset(slot);
    void* host = nullptr;
    CUDA_CHECK(cudaMallocHost(&host, 2 * sizeof(std::int64_t)));
    fresh->error_host.reset(host);
    s = std::move(fresh);
  }
  return *s;
}

cublasHandle_t blas(int device) {
  cublasHandle_t h = thread_state(device).blas.get();
  CUBLAS_CHECK(cublasSetStream(h, stream(device)));  // the capture stream while this thread captures
  CUBLAS_CHECK(cublasSetMathMode(h, allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  return h;
}

// Note [Capture stream]
// The capture stream waits for an event recorded on the device's stream
// before the capture begins, so the graph's first launch (always queued on
// the device's stream) and the capture itself come after everything queued
// there. The capture is "relaxed": the caching allocator may cudaMalloc a
// segment for the graph's private pool in the middle of it, which the
// stricter modes forbid. Anything that synchronises the capture stream
// (a host read) invalidates the capture; the engine refuses those first.
void begin_stream_capture(int device) {
  ThreadState& t = thread_state(device);
  if (t.capturing) throw InvalidArgument(fmt::format("DeviceGraph::capture: this thread is already capturing on gpu({})", device));
  select(device);
  if (!t.capture) {
    cudaStream_t s = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    t.capture.reset(s);
  }
  UniqueEvent ready = make_event();
  CUDA_CHECK(cudaEventRecord(ready.get(), stream(device)));
  CUDA_CHECK(cudaStreamWaitEvent(t.capture.get(), ready.get(), 0));
  CUDA_CHECK(cudaStreamBeginCapture(t.capture.get(), cudaStreamCaptureModeRelaxed));
  t.capturing = t.capture.get();
  t_capture_stream[std::size_t(device)] = t.capturing;
}

cudaGraphExec_t end_stream_capture(int device) {
  ThreadState& t = thread_state(device);
  cudaStream_t s = t.capturing;
  t.capturing = nullptr;
  t_capture_stream[std::size_t(device)] = nullptr;
  if (!s) throw InvalidArgument(fmt::format("DeviceGraph::capture: no capture is open on gpu({}) in this thread", device));
  cudaGraph_t graph = nullptr;
  cudaError_t status = cudaStreamEndCapture(s, &graph);
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (graph) cudaGraphDestroy(graph);
    throw InvalidArgument(fmt::format("DeviceGraph::capture: the capture on gpu({}) failed: {} (an operation that "
                                      "cannot be captured ran during it)",
                                      device, cudaGetErrorString(status)));
  }
  cudaGraphExec_t exec = nullptr;
  status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw InvalidArgument(fmt::format("DeviceGraph::capture: instantiating the graph on gpu({}) failed: {}", device,
                                      cudaGetErrorString(status)));
  }
  return exec;
}

void* staging(int device, std::size_t bytes) {
  ThreadState& t = thread_state(device);
  CUDA_CHECK(cudaEventSynchronize(t.staging_free.get()));  // the previous copy out of it is done
  if (t.staging_bytes < bytes) {
    t.staging.reset();
    std::size_t grown = bytes < (std::size_t(1) << 20) ? std::size_t(1) << 20 : bytes;
    void* p = nullptr;
    CUDA_CHECK(cudaMallocHost(&p, grown));
    t.staging.reset(p);
    t.staging_bytes = grown;
  }
  return t.staging.get();
}

void staging_used(int device) {
  CUDA_CHECK(cudaEventRecord(thread_state(device).staging_free.get(), stream(device)));
}

std::int64_t* reset_error_slot(int device) {
  ThreadState& t = thread_state(device);
  CUDA_CHECK(cudaMemsetAsync(t.error_slot.get(), 0, 2 * sizeof(std::int64_t), stream(device)));
  return static_cast<std::int64_t*>(t.error_slot.get());
}

bool read_error_slot(int device, std::int64_t& value) {
  ThreadState& t = thread_state(device);
  if (t.capturing) return false;  // a host read would end the capture: Note [Unchecked in a graph]
  auto* host = static_cast<std::int64_t*>(t.error_host.get());
  CUDA_CHECK(cudaMemcpyAsync(host, t.error_slot.get(), 2 * sizeof(std::int64_t), cudaMemcpyDeviceToHost, stream(device)));
  CUDA_CHECK(cudaStreamSynchronize(stream(device)));
  value = host[1];
  return host[0] != 0;
}

DeviceScratch::DeviceScratch(int device, std::size_t bytes)
    : device_(device), bytes_(bytes), data_(memory::allocator(Device::gpu(device)).allocate(bytes)) {}

DeviceScratch::~DeviceScratch() { memory::allocator(Device::gpu(device_)).deallocate(data_, bytes_); }

bool allow_tf32() noexcept { return g_tf32.load(std::memory_order_relaxed); }
void set_allow_tf32(bool on) noexcept { g_tf32.store(on, std::memory_order_relaxed); }

void synchronize(Device device) {
  if (device.is_cpu()) return;
  if (device.index < 0 || device.index >= device_count())
    throw InvalidArgument(fmt::format("cuda::synchronize: {} is not a usable device", device.to_string()));
  CUDA_CHECK(cudaStreamSynchronize(stream(device.index)));
}

}  // namespace ndgc::cuda
