// NCCL collectives for GPU arrays. See Note [NCCL in a group] in nccl_communicator.hpp.
#include "distributed/nccl_communicator.hpp"

#include <thread>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ops/gpu_writes.hpp"

namespace ndgc::distributed::detail {
namespace {

ncclDataType_t nccl_type(DataType dtype) noexcept {
  switch (dtype) {
    case DataType::float32: return ncclFloat32;
    case DataType::float64: return ncclFloat64;
    case DataType::int32: return ncclInt32;
    case DataType::int64: return ncclInt64;
    case DataType::uint8:
    case DataType::boolean: return ncclUint8;
    case DataType::float16: return ncclFloat16;
    case DataType::bfloat16: return ncclBfloat16;
  }
  return ncclUint8;
}

// boolean is 0/1 bytes: or is max, and is min.
ncclRedOp_t nccl_op(ReduceOp op, DataType dtype) noexcept {
  if (dtype == DataType::boolean) return op == ReduceOp::min ? ncclMin : ncclMax;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: return ncclSum;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
  }
  return ncclSum;
}

}  // namespace

NcclCommunicator::NcclCommunicator(Communicator& mpi, int device, const Header& header, Clock::time_point deadline)
    : mpi_(mpi), device_(device) {
  check(cudaSetDevice(device), header, "cudaSetDevice");
  auto id = std::make_shared<ncclUniqueId>();  // parked on a time-out (Note [Time-outs])
  if (mpi.rank() == 0) check(ncclGetUniqueId(id.get()), header, "ncclGetUniqueId");
  std::vector<MPI_Request> request(1, MPI_REQUEST_NULL);
  mpi.check(MPI_Ibcast(id.get(), int(sizeof(ncclUniqueId)), MPI_BYTE, 0, mpi.comm(), request.data()), header,
            "MPI_Ibcast (NCCL id)");
  mpi.wait_all(request, header, deadline, {id});
  // ncclCommInitRank blocks until every rank joined; they all did the
  // broadcast just before, so it waits only for their devices to be ready.
  check(ncclCommInitRank(&comm_, mpi.size(), *id, mpi.rank()), header, "ncclCommInitRank");
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), header, "cudaStreamCreate");
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_) ncclCommDestroy(comm_);
  if (stream_) cudaStreamDestroy(stream_);
}

void NcclCommunicator::abort() noexcept {
  if (comm_) ncclCommAbort(comm_);
  comm_ = nullptr;
}

void NcclCommunicator::check(ncclResult_t rc, const Header& header, const char* call) {
  if (rc == ncclSuccess) return;
  const std::string text = fmt::format("{} failed: {} ({})", call, ncclGetErrorString(rc), ncclGetLastError(comm_));
  abort();
  mpi_.mark_broken(fmt::format("{} (call {}) failed in NCCL", name_of(header.collective), header.sequence));
  mpi_.fail(header, text);
}

void NcclCommunicator::check(cudaError_t rc, const Header& header, const char* call) {
  if (rc == cudaSuccess) return;
  mpi_.fail(header, fmt::format("{} failed: {}", call, cudaGetErrorString(rc)));
}

void NcclCommunicator::wait(const Header& header, Clock::time_point deadline) {
  for (;;) {
    const cudaError_t q = cudaStreamQuery(stream_);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) check(q, header, "cudaStreamQuery");
    ncclResult_t async = ncclSuccess;
    check(ncclCommGetAsyncError(comm_, &async), header, "ncclCommGetAsyncError");
    check(async, header, "NCCL (asynchronous error)");
    if (Clock::now() > deadline) {
      abort();
      mpi_.mark_broken(fmt::format("{} (call {}) timed out in NCCL", name_of(header.collective), header.sequence));
      mpi_.fail(header, fmt::format("timed out after {} s in NCCL waiting for the other ranks; the NCCL "
                                    "communicator was aborted. NDGC_DIST_TIMEOUT sets the limit",
                                    mpi_.timeout_seconds()));
    }
    std::this_thread::yield();
  }
}

void NcclCommunicator::all_reduce(void* data, std::int64_t count, DataType dtype, ReduceOp op, const Header& header,
                                  Clock::time_point deadline) {
  check(cudaSetDevice(device_), header, "cudaSetDevice");
  check(cudaDeviceSynchronize(), header, "cudaDeviceSynchronize");
  ops::CountsAsGpuWrite writes;  // NCCL writes GPU memory outside the engine
  check(ncclAllReduce(data, data, std::size_t(count), nccl_type(dtype), nccl_op(op, dtype), comm_, stream_), header,
        "ncclAllReduce");
  wait(header, deadline);
}

void NcclCommunicator::broadcast(void* data, std::int64_t count, DataType dtype, int root, const Header& header,
                                 Clock::time_point deadline) {
  check(cudaSetDevice(device_), header, "cudaSetDevice");
  check(cudaDeviceSynchronize(), header, "cudaDeviceSynchronize");
  ops::CountsAsGpuWrite writes;  // NCCL writes GPU memory outside the engine
  check(ncclBroadcast(data, data, std::size_t(count), nccl_type(dtype), root, comm_, stream_), header, "ncclBroadcast");
  wait(header, deadline);
}

void NcclCommunicator::all_gather(const void* in, void* out, std::int64_t count, DataType dtype, const Header& header,
                                  Clock::time_point deadline) {
  check(cudaSetDevice(device_), header, "cudaSetDevice");
  check(cudaDeviceSynchronize(), header, "cudaDeviceSynchronize");
  ops::CountsAsGpuWrite writes;  // NCCL writes GPU memory outside the engine
  check(ncclAllGather(in, out, std::size_t(count), nccl_type(dtype), comm_, stream_), header, "ncclAllGather");
  wait(header, deadline);
}

}  // namespace ndgc::distributed::detail
