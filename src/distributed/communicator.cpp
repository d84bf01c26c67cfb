// The group's MPI communicator. See Note [Header check] and Note [Time-outs]
// in communicator.hpp.
#include "distributed/communicator.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "distributed/environment.hpp"
#include "ndgc/distributed.hpp"
#include "ndgc/error.hpp"
#include "support/options.hpp"

namespace ndgc::distributed::detail {
namespace {

constexpr int kHeaderWords = 7 + kMaxRank;
// Polls between clock reads and yields: MPI_Test is ~100 ns when nothing
// arrived, so the clock is read every few microseconds.
constexpr int kPollsPerCheck = 32;

void pack(const Header& h, std::int64_t* w) noexcept {
  std::fill(w, w + kHeaderWords, 0);
  w[0] = std::int64_t(h.collective);
  w[1] = std::int64_t(h.sequence);
  w[2] = (h.has_array ? 1 : 0) | (h.invalid ? 2 : 0);
  w[3] = std::int64_t(h.dtype);
  w[4] = std::int64_t(h.device.type) * 1024 + h.device.index;
  w[5] = h.argument;
  w[6] = h.shape.rank();
  for (int i = 0; i < h.shape.rank(); ++i) w[7 + i] = h.shape[i];
}

Header unpack(const std::int64_t* w) {
  Header h;
  h.collective = Collective(w[0]);
  h.sequence = std::uint64_t(w[1]);
  h.has_array = (w[2] & 1) != 0;
  h.invalid = (w[2] & 2) != 0;
  h.dtype = DataType(w[3]);
  h.device = Device{DeviceType(w[4] / 1024), int(w[4] % 1024)};
  h.argument = w[5];
  std::vector<std::int64_t> dims(w + 7, w + 7 + std::clamp<std::int64_t>(w[6], 0, kMaxRank));
  h.shape = Shape(std::span<const std::int64_t>(dims));
  return h;
}

std::string describe(const Header& h) {
  std::string s = fmt::format("{} (call {})", name_of(h.collective), h.sequence);
  if (h.has_array) s += fmt::format(" with {} {} on {}", h.shape.to_string(), to_string(h.dtype), h.device.to_string());
  if (h.collective == Collective::broadcast) s += fmt::format(" from root {}", h.argument);
  if (h.collective == Collective::all_reduce) s += fmt::format(", op {}", to_string(ReduceOp(h.argument)));
  return s;
}

std::string mpi_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) return fmt::format("MPI error {}", rc);
  return std::string(text, std::size_t(length));
}

}  // namespace

std::shared_ptr<void> keep_alive(const ndgc::detail::StorageRef& storage) {
  return std::make_shared<ndgc::detail::StorageRef>(storage);
}

const char* name_of(Collective c) noexcept {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::broadcast: return "broadcast";
    case Collective::all_gather: return "all_gather";
    case Collective::barrier: return "barrier";
  }
  return "?";
}

MPI_Datatype mpi_type(DataType dtype) noexcept {
  switch (dtype) {
    case DataType::float32: return MPI_FLOAT;
    case DataType::float64: return MPI_DOUBLE;
    case DataType::int32: return MPI_INT32_T;
    case DataType::int64: return MPI_INT64_T;
    case DataType::uint8: return MPI_UINT8_T;
    case DataType::boolean: return MPI_UINT8_T;
    // Moved as bits only: all_reduce refuses them on the host (process_group.cpp).
    case DataType::float16:
    case DataType::bfloat16: return MPI_UINT16_T;
  }
  return MPI_DATATYPE_NULL;
}

Communicator::Communicator() : env_(Environment::instance()), timeout_(support::options().dist_timeout) {
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  if (rc != MPI_SUCCESS) throw DistributedError("ProcessGroup: MPI_Comm_dup(MPI_COMM_WORLD) failed: " + mpi_text(rc));
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Communicator::~Communicator() {
  // A broken group still has requests in flight: freeing it would be
  // erroneous (Note [Time-outs]).
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!broken() && !finalized) MPI_Comm_free(&comm_);
}

std::string Communicator::where() const { return fmt::format("rank {} of {}", rank_, size_); }

Clock::time_point Communicator::deadline() const {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds()));
}

void Communicator::check_usable(const char* collective) const {
  if (broken())
    throw DistributedError(fmt::format("{} on {}: the group is broken since {}; end the job (mpirun stops the other ranks)",
                                       collective, where(), broken_reason_));
}

void Communicator::fail(const Header& header, const std::string& what) const {
  throw DistributedError(fmt::format("{} (call {}) on {}: {}", name_of(header.collective), header.sequence, where(), what));
}

void Communicator::check(int rc, const Header& header, const char* call) const {
  if (rc != MPI_SUCCESS) fail(header, fmt::format("{} failed: {}", call, mpi_text(rc)));
}

bool Communicator::test_all(std::vector<MPI_Request>& requests, const Header& header) {
  int done = 0;
  std::vector<MPI_Status> statuses(requests.size());
  const int rc = MPI_Testall(int(requests.size()), requests.data(), &done, statuses.data());
  if (rc == MPI_ERR_IN_STATUS) {
    for (const MPI_Status& s : statuses)
      if (s.MPI_ERROR != MPI_SUCCESS && s.MPI_ERROR != MPI_ERR_PENDING) check(s.MPI_ERROR, header, "MPI_Testall");
  }
  check(rc, header, "MPI_Testall");
  return done != 0;
}

void Communicator::wait_all(std::vector<MPI_Request>& requests, const Header& header, Clock::time_point deadline,
                            KeepAlive keep) {
  for (int polls = 1;; ++polls) {
    if (test_all(requests, header)) return;
    if (polls % kPollsPerCheck == 0) {
      if (Clock::now() > deadline) {
        mark_broken(fmt::format("{} (call {}) timed out", name_of(header.collective), header.sequence));
        abandoned_.push_back({std::move(requests), std::move(keep)});
        fail(header, fmt::format(
                         "timed out after {} s waiting for the other ranks (a rank crashed, hangs, or skipped this "
                         "collective); NDGC_DIST_TIMEOUT sets the limit. The group is broken now: end the job",
                         timeout_seconds()));
      }
      std::this_thread::yield();
    }
  }
}

int Communicator::agree(Header& mine, Clock::time_point deadline) {
  mine.sequence = sequence_++;
  // See Note [Header check]. Layout: words, their negations, then the
  // invalid word (size - rank when this rank's arguments are invalid, else
  // 0: the maximum names the lowest such rank). On the heap, parked with the
  // request if it times out (Note [Time-outs]).
  constexpr int kWords = 2 * kHeaderWords + 1;
  auto reduced = std::make_shared<std::vector<std::int64_t>>(std::size_t(kWords));
  std::int64_t* w = reduced->data();
  pack(mine, w);
  for (int i = 0; i < kHeaderWords; ++i) w[kHeaderWords + i] = -w[i];
  w[2 * kHeaderWords] = mine.invalid ? std::int64_t(size_ - rank_) : 0;
  std::vector<MPI_Request> request(1, MPI_REQUEST_NULL);
  check(MPI_Iallreduce(MPI_IN_PLACE, w, kWords, MPI_INT64_T, MPI_MAX, comm_, request.data()), mine,
        "MPI_Iallreduce (header)");
  wait_all(request, mine, deadline, {reduced});
  if (w[2 * kHeaderWords] > 0) return size_ - int(w[2 * kHeaderWords]);  // its header has no array: not compared
  bool equal = true;
  for (int i = 0; i < kHeaderWords; ++i) equal = equal && w[i] == -w[kHeaderWords + i];
  if (equal) return -1;
  // The ranks disagree, and every rank knows it: all of them gather the
  // headers to name what each passed.
  auto buffer = std::make_shared<std::vector<std::int64_t>>(std::size_t(kHeaderWords) * std::size_t(size_ + 1));
  std::int64_t* own = buffer->data() + std::size_t(kHeaderWords) * std::size_t(size_);
  pack(mine, own);
  check(MPI_Iallgather(own, kHeaderWords, MPI_INT64_T, buffer->data(), kHeaderWords, MPI_INT64_T, comm_,
                       request.data()),
        mine, "MPI_Iallgather (header)");
  wait_all(request, mine, deadline, {buffer});
  const std::vector<std::int64_t>& words = *buffer;
  std::vector<Header> all;
  all.reserve(std::size_t(size_));
  for (int r = 0; r < size_; ++r) all.push_back(unpack(words.data() + std::size_t(r) * kHeaderWords));
  const std::int64_t* first = words.data();
  std::vector<int> differ;
  for (int r = 1; r < size_; ++r)
    if (!std::equal(first, first + kHeaderWords, words.data() + std::size_t(r) * kHeaderWords)) differ.push_back(r);
  std::string list = fmt::format("rank 0 called {}", describe(all[0]));
  for (int r : differ) list += fmt::format("; rank {} called {}", r, describe(all[std::size_t(r)]));
  fail(mine, fmt::format("the ranks disagree: {}. Every rank must make the same collectives in the same order, with "
                         "arrays of the same shape, dtype and device (and the same root). No data was exchanged",
                         list));
}

}  // namespace ndgc::distributed::detail
