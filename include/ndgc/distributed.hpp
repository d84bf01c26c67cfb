// Distributed: process groups and collectives over MPI (host arrays) and NCCL
// (GPU arrays), and data-parallel training on top (docs/distributed.md).
//
//   #include <ndgc/distributed.hpp>                       // link ndgc::distributed
//   auto pg = distributed::ProcessGroup::from_environment(); // mpirun -np 2 ./prog, or ./prog (size 1)
//   NDArray g = m.ones({4, 3}) * float(pg.rank() + 1);
//   pg.all_reduce(g, distributed::ReduceOp::mean);         // in place: every rank holds 1.5
//   pg.broadcast(w, 0);                                    // in place: rank 0's w everywhere
//   NDArray all = pg.all_gather(g);                        // {size, 4, 3}, joins g's manager
//   pg.barrier();
//
//   // Data-parallel: parameters broadcast from rank 0, gradients averaged in buckets.
//   config.gradient_reducer = distributed::make_gradient_reducer(pg);  // 25 MiB buckets
//   train_set.set_batch_size(16).set_shard(pg.rank(), pg.size());      // 16 rows per rank
//
// The MPI environment. The first from_environment() initialises MPI
// (MPI_Init_thread) unless the program did; every ProcessGroup of the process
// shares that one environment, which is finalized once, when the process
// exits (and after the last group is gone). A program started without mpirun
// is a group of size 1 (MPI's singleton start-up): the same code runs alone.
//
// Collectives. Every rank of the group must call the same collectives in the
// same order with arrays of the same shape and dtype (and, for broadcast, the
// same root). Each collective first exchanges a small header (which
// collective, its sequence number, shape, dtype, device, root) and checks it,
// so a rank that disagrees makes every rank throw DistributedError naming the
// ranks and what they passed, before any data moves. They work in place on any
// array: a contiguous one directly, a strided view through a contiguous copy
// written back through the view into its base. Broadcast views (stride 0)
// are not writable: InvalidArgument.
//
// Dtypes. float32, float64, int32, int64, uint8 for sum, mean, max, min.
// Integer sums wrap (as ndgc's own sums do); an integer mean is the sum
// divided by size() with C++'s integer division (truncated toward zero).
// boolean: sum and max are logical or, min is logical and, mean is refused
// (DTypeMismatch). broadcast, all_gather: every dtype.
//
// Devices. Host arrays go over MPI. GPU arrays (Device::gpu(i)) go over NCCL
// when the library was built with NCCL and the CUDA engine (NDGC_HAVE_NCCL);
// the NCCL unique id is exchanged over MPI. Otherwise a GPU array is a
// DistributedError saying so.
//
// Time-outs. No rank waits forever for a peer that does not arrive: each
// collective first exchanges a small header (non-blocking, polled against a
// deadline, NDGC_DIST_TIMEOUT seconds (default 600) or set_timeout()), which
// is where a crashed, hung or absent rank or mismatched arguments show up.
// Once every rank has agreed, the data moves with MPI's blocking
// collectives (all_reduce_async: non-blocking, polled to the same deadline);
// a peer that dies during that transfer ends the job through mpirun rather
// than a time-out. A time-out throws DistributedError and breaks the group:
// the other ranks can no longer be in step with this one, so every later
// collective on it throws at once (end the job; mpirun then stops the other
// ranks). Buffers an unfinished request may still write into are kept alive
// until the process exits. See Note [Time-outs] in src/distributed/communicator.hpp
// and Note [Blocking payload] in src/distributed/process_group.cpp.
//
// Errors. Every failure is a DistributedError (ndgc/error.hpp) whose message
// names this rank, the group size and the collective; MPI error codes are
// turned into text with MPI_Error_string (the communicator is set to
// MPI_ERRORS_RETURN, so MPI never aborts the process on its own).
//
// Thread-safety: a ProcessGroup may be used from several threads; its
// collectives are serialised (one in flight per process at a time, except
// the non-blocking ones of all_reduce_async), in the order the threads
// reach them, which must be the same order on every rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ndgc/ndarray.hpp"
#include "ndgc/training.hpp"

namespace ndgc::distributed {

enum class ReduceOp : std::uint8_t { sum, mean, max, min };
inline constexpr std::size_t kDefaultBucketBytes = std::size_t(25) << 20;  // PyTorch DDP's bucket_cap_mb
const char* to_string(ReduceOp op) noexcept;

namespace detail {
class GroupState;
class PendingReduce;
}  // namespace detail

// A non-blocking all-reduce in flight (all_reduce_async). wait() finishes it
// (the array then holds the result) or throws DistributedError; destroying a
// Work that was not waited for waits for it and swallows the error, since a
// destructor must not throw.
class Work {
 public:
  Work() noexcept;
  ~Work();
  Work(Work&&) noexcept;
  Work& operator=(Work&&) noexcept;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  void wait();
  bool pending() const noexcept;

 private:
  friend class ProcessGroup;
  explicit Work(std::unique_ptr<detail::PendingReduce> pending) noexcept;
  std::unique_ptr<detail::PendingReduce> pending_;
};

class ProcessGroup {
 public:
  // All the processes of the job (MPI_COMM_WORLD): initialises MPI if needed;
  // a process started without mpirun is a group of size 1. Cheap after the
  // first call: every group made here shares one communicator.
  static ProcessGroup from_environment();

  int rank() const noexcept;
  int size() const noexcept;

  // In place on every rank: a becomes the reduction of all ranks' a.
  void all_reduce(NDArray& a, ReduceOp op = ReduceOp::sum);
  // In place: every rank's a becomes root's a.
  void broadcast(NDArray& a, int root = 0);
  // A new array of shape {size()} + a's shape in a's manager, on a's device:
  // row r is rank r's a.
  NDArray all_gather(const NDArray& a, Site site = Site::current());
  void barrier();

  // Starts an all-reduce and returns at once (the header check included, so
  // a mismatch throws here); the array must stay open and untouched until
  // wait(). Several may be in flight; wait for them in any order. Host
  // arrays only when contiguous (a view: use all_reduce).
  [[nodiscard]] Work all_reduce_async(NDArray& a, ReduceOp op = ReduceOp::sum);

  // Seconds a collective waits for the other ranks (NDGC_DIST_TIMEOUT).
  double timeout() const noexcept;
  // For this process's groups from now on; InvalidArgument unless > 0.
  void set_timeout(double seconds);
  // True after a time-out: every collective then throws.
  bool broken() const noexcept;
  // "rank 1 of 2"
  std::string describe() const;

 private:
  explicit ProcessGroup(std::shared_ptr<detail::GroupState> state) noexcept;
  std::shared_ptr<detail::GroupState> state_;
};

// Data-parallel training (training::GradientReducer over a ProcessGroup):
// the Trainer broadcasts the initial parameters from rank 0, then after each
// backward pass the gradients are packed into buckets of `bucket_bytes`
// (default 25 MiB, PyTorch DDP's) in reverse parameter order (the order
// backward produces them), and each gradient replaced by the row-weighted
// mean over ranks: sum_r(rows_r · g_r) / sum_r rows_r, which is the gradient
// of the mean loss over the global batch. With `overlap` (the default) a
// bucket's all-reduce starts during backward, as soon as its last gradient is
// final, and the optimizer step waits for all of them; without it, they all
// start after backward. Same bits either way. See Note [Gradient buckets] in
// src/distributed/gradient_reducer.cpp.
std::shared_ptr<training::GradientReducer> make_gradient_reducer(ProcessGroup group,
                                                                 std::size_t bucket_bytes = kDefaultBucketBytes,
                                                                 bool overlap = true);

}  // namespace ndgc::distributed
