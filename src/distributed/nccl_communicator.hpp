// The group's NCCL communicator, for GPU arrays (built with NDGC_HAVE_NCCL).
//
// Note [NCCL in a group]
// Made on the group's first GPU collective, which every rank reaches at the
// same call (the header check agreed on it): rank 0 makes the unique id,
// MPI broadcasts it (polled to the deadline, Note [Time-outs]), each rank
// calls ncclCommInitRank on its array's device. One communicator per group
// and per device: a later collective on another GPU is a DistributedError.
// Streams: ndgc's CUDA engine may still be writing the array on its own
// stream, so the device is synchronised before the NCCL call, which runs on
// the communicator's stream; that stream is then polled (cudaStreamQuery
// and ncclCommGetAsyncError) to the deadline. On a time-out or an
// asynchronous NCCL error the communicator is aborted (ncclCommAbort) and
// the group is broken, as for MPI.
//
// Thread-safety: used under the MPI communicator's mutex.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "distributed/communicator.hpp"
#include "ndgc/distributed.hpp"

namespace ndgc::distributed::detail {

class NcclCommunicator {
 public:
  NcclCommunicator(Communicator& mpi, int device, const Header& header, Clock::time_point deadline);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int device() const noexcept { return device_; }
  // In place on `count` contiguous elements; a mean's division is the caller's.
  void all_reduce(void* data, std::int64_t count, DataType dtype, ReduceOp op, const Header& header,
                  Clock::time_point deadline);
  void broadcast(void* data, std::int64_t count, DataType dtype, int root, const Header& header,
                 Clock::time_point deadline);
  void all_gather(const void* in, void* out, std::int64_t count, DataType dtype, const Header& header,
                  Clock::time_point deadline);

 private:
  void check(ncclResult_t rc, const Header& header, const char* call);
  void check(cudaError_t rc, const Header& header, const char* call);
  void wait(const Header& header, Clock::time_point deadline);
  void abort() noexcept;

  Communicator& mpi_;
  int device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace ndgc::distributed::detail
