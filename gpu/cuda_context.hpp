// The CUDA runtime side of the engine: the device probe, one stream per
// device, per-thread cuBLAS handles, pinned staging buffers and error slots,
// and the RAII owners of each.
//
// Thread-safety: every function may be called from any thread. Per-device
// state is created once (std::call_once); per-thread state lives in a
// thread_local table and dies with its thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "ndgc/device.hpp"

namespace ndgc::cuda {

// ---- RAII owners ---------------------------------------------------------------
struct StreamDeleter {
  void operator()(CUstream_st* s) const noexcept { cudaStreamDestroy(s); }
};
using UniqueStream = std::unique_ptr<CUstream_st, StreamDeleter>;
struct EventDeleter {
  void operator()(CUevent_st* e) const noexcept { cudaEventDestroy(e); }
};
using UniqueEvent = std::unique_ptr<CUevent_st, EventDeleter>;
struct CublasDeleter {
  void operator()(cublasContext* h) const noexcept { cublasDestroy(h); }
};
using UniqueCublas = std::unique_ptr<cublasContext, CublasDeleter>;
struct PinnedDeleter {
  void operator()(void* p) const noexcept { cudaFreeHost(p); }
};
using UniquePinned = std::unique_ptr<void, PinnedDeleter>;
struct DeviceDeleter {
  void operator()(void* p) const noexcept { cudaFree(p); }
};
using UniqueDeviceMemory = std::unique_ptr<void, DeviceDeleter>;

UniqueEvent make_event(bool timing = false);

// ---- the probe -------------------------------------------------------------------
// Usable devices (cudaGetDeviceCount, asked once); 0 on any failure, never throws.
// The first call also registers the engine and one allocator per device.
int device_count() noexcept;
// Why device_count() is 0 ("cudaGetDeviceCount: no CUDA-capable device is detected").
std::string why_no_device() noexcept;

// Note [One stream per device]
// Every op on device d, from any thread, is queued on one non-blocking stream
// of d. The alternative, a stream per thread, would let two threads' kernels
// overlap, but the ops layer hands the engine bare views with no record of
// which stream last wrote an array: an array made on thread A and used on
// thread B would need an event per array (core changes) or would race. With
// one stream, queue order is the order in which threads issued their ops, and
// handing a handle to another thread happens after its producer was queued,
// so the consumer runs after it: correct with no events. A host read
// synchronises that stream only (never the device). A block freed by the
// allocator is reused on the same stream, so stream-ordered reuse needs no
// event either (the caching allocator's record_event still gets one). A graph
// is captured on a stream of its own and replayed on this one (Note [Capture
// stream]). Streams live for the process: destroying one after main()
// returns races the driver's shutdown.

// The stream this thread's work on `device` goes to: the device's one
// stream (Note [One stream per device]), or while this thread captures a
// graph, its capture stream.
cudaStream_t stream(int device);

// Note [Capture stream]: a graph is captured on a stream of the capturing
// thread's, so work other threads queue meanwhile (a prefetching thread's
// batch copies) runs as ever instead of joining the graph.
void begin_stream_capture(int device);
// Ends this thread's capture on `device`; throws InvalidArgument when the
// capture was invalidated (an operation that cannot be captured ran).
cudaGraphExec_t end_stream_capture(int device);
bool capturing(int device) noexcept;  // this thread, on `device`

// The device holding `ptr` (0 when there is only one; cudaPointerGetAttributes otherwise).
int device_of(const void* ptr);
// Makes `device` current for the calling thread when there is more than one.
void select(int device);

// ---- per-thread state (one per device per thread) ---------------------------------
struct ThreadState {
  UniqueCublas blas;              // set to stream(device) by blas()
  UniquePinned staging;           // pinned host buffer for to_host/from_host
  std::size_t staging_bytes = 0;
  UniqueEvent staging_free;       // recorded after the last copy out of `staging`
  UniqueDeviceMemory error_slot;  // device: [flag, value] written by kernels that validate
  UniquePinned error_host;             // pinned copy of the slot
  UniqueStream capture;           // made at the first capture
  cudaStream_t capturing = nullptr;  // `capture` while a capture is open
};
ThreadState& thread_state(int device);
cublasHandle_t blas(int device);
// A pinned buffer of at least `bytes`, safe to overwrite (the last copy out of it has finished).
void* staging(int device, std::size_t bytes);
// After queuing a copy out of the staging buffer.
void staging_used(int device);

// Error slots: kernels that find a bad value (integer division by zero, a
// one_hot index out of range) write [1, value] into the slot; the op then
// synchronises and throws InvalidArgument naming it.
std::int64_t* reset_error_slot(int device);  // zeroed on the stream; returns the device pointer
// Synchronises stream(device); true and the value when a kernel flagged an error.
// Note [Unchecked in a graph]
// Kernels that validate (one_hot's indices, integer division) report through
// the slot, which the host reads after them: a synchronisation, which a
// capture cannot hold. While this thread captures, the read is skipped and
// reports no error, so a replay does not check: an index out of range there
// writes nothing for its row (the kernels guard every access) instead of
// throwing. Eager steps check as ever.
bool read_error_slot(int device, std::int64_t& value);

// A temporary device buffer from the device's allocator (accounted; freed
// stream-ordered: see Note [One stream per device]).
class DeviceScratch {
 public:
  DeviceScratch(int device, std::size_t bytes);
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  void* get() const noexcept { return data_; }

 private:
  int device_;
  std::size_t bytes_;
  void* data_;
};

// ---- switches -------------------------------------------------------------------
bool allow_tf32() noexcept;
void set_allow_tf32(bool on) noexcept;

}  // namespace ndgc::cuda
