// The group's MPI communicator: header agreement, polled waits with a
// deadline, MPI error codes turned into DistributedError.
//
// Note [Header check]
// Before any data moves, the ranks agree on a header of 15 int64 words: the
// collective, its sequence number in the group, dtype, device, root (or
// reduce op), rank and dimensions of the array. The common case (every rank
// agrees) costs one small non-blocking all-reduce: each rank contributes
// its words w and their negations -w under MPI_MAX, which yields max(w) and
// -min(w) for every word, so max == min everywhere exactly when all headers
// are equal (no hash, no collisions), plus one word that carries the lowest
// rank whose own arguments were invalid. Every rank gets the same reduced
// words, so every rank takes the same branch. Only when the ranks disagree
// do they all-gather the full headers (a second small call, on every rank)
// to throw the same DistributedError listing what each rank passed. No rank
// starts the data collective, so none is left waiting for a peer that
// already gave up, and the group stays usable (the sequence numbers still
// agree). The header exchange is always the same call, so it matches across
// ranks even when they disagree on the collective itself. Cost: latency, no
// bandwidth (perf/RESULTS.md, "Distributed, third pass").
//
// Note [Time-outs]
// MPI has no time-out for a collective a peer never joins. So the header
// exchange is non-blocking (MPI_Iallreduce, MPI_Iallgather) and polled with
// MPI_Test until the collective's deadline (NDGC_DIST_TIMEOUT from its
// start); MPI_Test also drives MPI's progress. That is where a rank that
// crashed, hangs, or skipped the collective shows up: it never sends its
// header. A collective request cannot be cancelled, so after a time-out MPI
// may still write into its buffers: the request and StorageRefs to every
// buffer it touches are parked until exit (the memory stays allocated and
// accounted), and the group is broken: this rank is out of step with the
// others, so any later collective throws at once. At exit a broken group is
// not freed (its requests are still pending) and MPI_Finalize is left to
// mpirun's clean-up. What the deadline does not cover: the payload of the
// blocking collectives, see Note [Blocking payload] in process_group.cpp.
//
// Thread-safety: every member is used under `mu`, but for the atomic
// time-out and broken flag, which ProcessGroup reads without it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <mpi.h>

#include "core/storage.hpp"
#include "ndgc/device.hpp"
#include "ndgc/dtype.hpp"
#include "ndgc/shape.hpp"

namespace ndgc::distributed::detail {

class Environment;

enum class Collective : std::int64_t { all_reduce, broadcast, all_gather, barrier };
const char* name_of(Collective c) noexcept;

struct Header {
  Collective collective = Collective::barrier;
  std::uint64_t sequence = 0;
  bool has_array = false;
  bool invalid = false;  // this rank's arguments failed its local checks
  DataType dtype = DataType::float32;
  Device device = Device::cpu();
  std::int64_t argument = 0;  // broadcast: root; all_reduce: the ReduceOp
  Shape shape;
};

using Clock = std::chrono::steady_clock;
// Buffers a pending request reads or writes (StorageRefs, host vectors):
// kept alive if it is abandoned (Note [Time-outs]).
using KeepAlive = std::vector<std::shared_ptr<void>>;
std::shared_ptr<void> keep_alive(const ndgc::detail::StorageRef& storage);

class Communicator {
 public:
  Communicator();  // a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  std::mutex mu;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  MPI_Comm comm() const noexcept { return comm_; }
  // "rank 1 of 2"
  std::string where() const;

  double timeout_seconds() const noexcept { return timeout_.load(std::memory_order_relaxed); }
  void set_timeout(double seconds) noexcept { timeout_.store(seconds, std::memory_order_relaxed); }
  Clock::time_point deadline() const;
  bool broken() const noexcept { return broken_.load(std::memory_order_acquire); }
  void mark_broken(std::string reason) {
    broken_reason_ = std::move(reason);
    broken_.store(true, std::memory_order_release);
  }
  // DistributedError when broken (see Note [Time-outs]).
  void check_usable(const char* collective) const;

  // Fills in the sequence number and checks every rank passes an equal
  // header (see Note [Header check]). DistributedError on every rank
  // otherwise. Returns the first rank whose header says `invalid`, or -1.
  int agree(Header& mine, Clock::time_point deadline);

  // Polls until every request completes or the deadline passes; see Note
  // [Time-outs]. `keep`: buffers the requests use.
  void wait_all(std::vector<MPI_Request>& requests, const Header& header, Clock::time_point deadline,
                KeepAlive keep);
  // True when every request completed (MPI_Testall); throws on an MPI error.
  bool test_all(std::vector<MPI_Request>& requests, const Header& header);

  // DistributedError for an MPI return code other than MPI_SUCCESS.
  void check(int rc, const Header& header, const char* call) const;
  [[noreturn]] void fail(const Header& header, const std::string& what) const;

 private:
  std::shared_ptr<Environment> env_;  // outlives comm_; see Note [One MPI environment]
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::atomic<double> timeout_;      // read without the mutex by ProcessGroup::timeout()
  std::uint64_t sequence_ = 0;
  std::atomic<bool> broken_{false};  // read without the mutex by ProcessGroup::broken()
  std::string broken_reason_;
  struct Abandoned {
    std::vector<MPI_Request> requests;
    KeepAlive keep;
  };
  std::vector<Abandoned> abandoned_;
};

// MPI's datatype for an ndgc dtype (boolean travels as bytes).
MPI_Datatype mpi_type(DataType dtype) noexcept;

}  // namespace ndgc::distributed::detail
