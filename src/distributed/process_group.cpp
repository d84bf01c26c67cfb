// ProcessGroup: collectives on NDArrays, over the group's MPI communicator
// (host arrays) or NCCL (GPU arrays, NDGC_HAVE_NCCL).
//
// Each collective: validate locally, agree on the header with every rank
// (Note [Header check], polled to the deadline: Note [Time-outs]), stage the
// array into a contiguous buffer if it is a view (Note [Staging views]),
// move the data with MPI's blocking collective in chunks (Note [Blocking
// payload]; all_reduce_async: the non-blocking one, polled), write back.
// Thread-safety: one collective at a time per process, under the
// communicator's mutex. Key number: payload chunks of 16 MiB.
#include <exception>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "core/reclaim_queue.hpp"
#include "core/registry.hpp"
#include "distributed/group_state.hpp"
#include "ndgc/distributed.hpp"
#include "ndgc/error.hpp"
#include "ops/op_support.hpp"

namespace ndgc::distributed {

using ndgc::detail::Pinned;
using ndgc::detail::Storage;
using ndgc::detail::StorageRef;
using detail::Clock;
using detail::Collective;
using detail::GroupState;
using detail::Header;
using detail::KeepAlive;

const char* to_string(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::mean: return "mean";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

namespace detail {
namespace {

// Note [Blocking payload]
// Once the header exchange has succeeded, every rank is inside the same
// collective with the same dtype, count, op and root: the rendezvous is
// over, and what remains is moving bytes. That part goes through MPI's
// blocking collectives (MPI_Allreduce, MPI_Bcast, MPI_Allgather), whose
// algorithms OpenMPI's tuned component picks by message size; the
// non-blocking ones (libnbc), polled, reached only 0.56-0.77 of the
// blocking MPI_Allreduce's bandwidth at 1-256 MiB (perf/RESULTS.md). The
// payload goes in chunks of kPayloadChunkBytes: OpenMPI's all-reduce takes a
// scratch buffer as large as the message on every call, and above glibc's
// 32 MiB mmap ceiling that is fresh, page-faulting memory each time (256
// MiB in one MPI_Allreduce: ~0.8 s; in 16 MiB pieces: ~0.05 s on the
// development machine). Chunks are elementwise slices, so the result is the
// same bits on every rank.
// What the deadline covers then: a rank that crashes, hangs or skips the
// collective before it, or passes other arguments (the header exchange, to
// NDGC_DIST_TIMEOUT, as before). What it does not: a peer that dies or
// stops during the transfer itself. A dead peer ends the job (mpirun
// aborts every rank when one exits abnormally), and an MPI error code
// becomes a DistributedError that breaks the group; a peer that is alive
// but stopped (a debugger, SIGSTOP) in the middle of the transfer is waited
// for. all_reduce_async keeps the non-blocking MPI_Iallreduce polled to the
// deadline: its Works may be waited in any order, and its point is to
// return before the data has moved.
constexpr std::size_t kPayloadChunkBytes = std::size_t(16) << 20;

// Elements per payload chunk for a dtype (MPI counts are int: always fits).
std::int64_t chunk_elements(DataType dtype) noexcept {
  return std::int64_t(kPayloadChunkBytes / size_of(dtype));
}

MPI_Op mpi_op(ReduceOp op, DataType dtype) noexcept {
  if (dtype == DataType::boolean) return op == ReduceOp::min ? MPI_LAND : MPI_LOR;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  return MPI_OP_NULL;
}

// Note [Staging views]
// MPI and NCCL take one pointer to contiguous elements. A contiguous array is
// passed as it is (its own buffer, in place); a strided view is copied into a
// contiguous buffer of its device's allocator (so it is accounted), reduced
// there, and copied back through the view, which writes its base. The pin
// taken here keeps the array open for the whole collective: closing it (or
// its manager) meanwhile takes effect when the collective ends.
struct Staged {
  Pinned pin;
  ops::TensorView view;   // the array as it is
  StorageRef buffer;      // what the collective reads and writes
  void* data = nullptr;
  bool staged = false;

  Staged(const NDArray& a, const char* op) : pin(a, op) {
    view = ops::view_of(*pin);
    if (pin->is_contiguous()) {
      buffer = pin->storage;
      data = pin->data();
      return;
    }
    buffer = StorageRef(Storage::allocate(pin->device, std::max<std::size_t>(pin->nbytes(), 1)));
    data = buffer->data();
    staged = true;
    ops::engine(pin->device).copy(view, contiguous());
  }
  ops::TensorView contiguous() const noexcept { return ops::contiguous_view(data, pin->dtype, pin->shape); }
  std::int64_t count() const noexcept { return pin->size(); }
  void write_back() {
    if (staged) ops::engine(pin->device).copy(contiguous(), view);
  }
};

Header header_of(Collective c, const ndgc::detail::ArrayImpl& a, std::int64_t argument) {
  Header h;
  h.collective = c;
  h.has_array = true;
  h.dtype = a.dtype;
  h.device = a.device;
  h.shape = a.shape;
  h.argument = argument;
  return h;
}

// An MPI error inside a blocking payload: some ranks may have finished the
// collective and others not, so the group is out of step (broken).
void check_payload(Communicator& mpi, int rc, const Header& h, const char* call) {
  if (rc == MPI_SUCCESS) return;
  mpi.mark_broken(fmt::format("{} (call {}) failed in {}", name_of(h.collective), h.sequence, call));
  mpi.check(rc, h, call);
}

void divide_for_mean(const Staged& s, int size) {
  if (size > 1) ops::engine(s.pin->device).binary_scalar(ops::Binary::div, s.contiguous(), double(size), false, s.contiguous());
}

}  // namespace

// A started all_reduce (ProcessGroup::all_reduce_async).
class PendingReduce {
 public:
  std::shared_ptr<GroupState> group;
  std::optional<Staged> staged;
  Header header;
  ReduceOp op = ReduceOp::sum;
  std::vector<MPI_Request> requests;
  Clock::time_point deadline;
  bool done = false;

  void wait() {
    if (done) return;
    done = true;  // a failure is not retried
    std::lock_guard lock(group->mpi.mu);
    group->mpi.wait_all(requests, header, deadline, {detail::keep_alive(staged->buffer)});
    if (op == ReduceOp::mean) divide_for_mean(*staged, group->mpi.size());
    staged->write_back();
    staged.reset();
  }
};

}  // namespace detail

namespace {

using detail::Staged;

std::shared_ptr<GroupState> world() {
  static std::mutex mu;
  static std::shared_ptr<GroupState> state;  // after the environment's static: dies first
  std::lock_guard lock(mu);
  if (!state) state = std::make_shared<GroupState>();
  return state;
}

// The local half of a collective: validation that may throw on this rank
// only. Its error goes into the header (as `invalid`) so every rank learns
// of it in the header exchange and throws, rather than leaving the others
// waiting; this rank rethrows its own error.
struct Local {
  std::optional<Staged> staged;
  std::exception_ptr error;
};

void agree_or_throw(detail::Communicator& mpi, Header& h, const Local& local, Clock::time_point deadline) {
  h.invalid = local.error != nullptr;
  if (h.invalid) h.has_array = false;
  const int invalid_rank = mpi.agree(h, deadline);
  if (local.error) std::rethrow_exception(local.error);
  if (invalid_rank >= 0)
    mpi.fail(h, fmt::format("rank {} could not take part: its arguments were invalid (it raised its own error, "
                            "which names them); no data was exchanged",
                            invalid_rank));
}

void check_gpu_supported(const ndgc::detail::ArrayImpl& a, [[maybe_unused]] const char* op) {
  if (a.device.is_cpu()) return;
#if !NDGC_HAVE_NCCL
  throw DistributedError(fmt::format(
      "{}: {} is on {}, but this ndgc::distributed was built without NCCL (NDGC_HAVE_NCCL), so only host arrays "
      "can take part in collectives; copy it to the host or rebuild with the CUDA toolkit's NCCL",
      op, ops::describe(a), a.device.to_string()));
#endif
}

#if NDGC_HAVE_NCCL
// The group's NCCL communicator, made on the first GPU collective (Note [NCCL in a group]).
detail::NcclCommunicator& nccl_for(GroupState& state, const Header& h, Clock::time_point deadline) {
  if (!state.nccl) state.nccl = std::make_unique<detail::NcclCommunicator>(state.mpi, h.device.index, h, deadline);
  if (state.nccl->device() != h.device.index)
    state.mpi.fail(h, fmt::format("this group's NCCL communicator is on gpu({}), the array on {}; use one GPU per "
                                  "rank and group",
                                  state.nccl->device(), h.device.to_string()));
  return *state.nccl;
}
#endif

template <class F>
void capture(Local& local, F&& f) {
  try {
    f();
  } catch (const Error&) {
    local.error = std::current_exception();
  }
}

// The local checks and the header exchange of an all_reduce (both forms),
// under the communicator's mutex. Fills in `h`.
Staged agree_on_all_reduce(detail::Communicator& mpi, NDArray& a, ReduceOp op, Header& h,
                           Clock::time_point deadline) {
  Local local;
  h.collective = Collective::all_reduce;
  capture(local, [&] {
    Pinned p(a, "all_reduce");
    check_gpu_supported(*p, "all_reduce");
    ops::check_writable("all_reduce", *p);
    if (p->dtype == DataType::boolean && op == ReduceOp::mean)
      throw DTypeMismatch(fmt::format("all_reduce: {} is boolean, which has no mean (sum and max are or, min is and)",
                                      ops::describe(*p)));
    if (is_half(p->dtype) && p->device.is_cpu())
      throw DTypeMismatch(fmt::format("all_reduce: {} is {}, which MPI cannot reduce; reduce a float32 copy "
                                      "(to_type(DataType::float32)) and convert back",
                                      ops::describe(*p), to_string(p->dtype)));
    h = detail::header_of(Collective::all_reduce, *p, std::int64_t(op));
    local.staged.emplace(a, "all_reduce");
  });
  agree_or_throw(mpi, h, local, deadline);
  return std::move(*local.staged);
}

}  // namespace

ProcessGroup::ProcessGroup(std::shared_ptr<GroupState> state) noexcept : state_(std::move(state)) {}

ProcessGroup ProcessGroup::from_environment() { return ProcessGroup(world()); }

int ProcessGroup::rank() const noexcept { return state_->mpi.rank(); }
int ProcessGroup::size() const noexcept { return state_->mpi.size(); }
double ProcessGroup::timeout() const noexcept { return state_->mpi.timeout_seconds(); }
bool ProcessGroup::broken() const noexcept { return state_->mpi.broken(); }
std::string ProcessGroup::describe() const { return state_->mpi.where(); }

void ProcessGroup::set_timeout(double seconds) {
  if (!(seconds > 0)) throw InvalidArgument(fmt::format("ProcessGroup::set_timeout: {} s is not positive", seconds));
  std::lock_guard lock(state_->mpi.mu);
  state_->mpi.set_timeout(seconds);
}

Work ProcessGroup::all_reduce_async(NDArray& a, ReduceOp op) {
  ndgc::detail::enter();
  detail::Communicator& mpi = state_->mpi;
  std::unique_lock lock(mpi.mu);
  mpi.check_usable("all_reduce");
  const Clock::time_point deadline = mpi.deadline();
  Header h;
  Staged s = agree_on_all_reduce(mpi, a, op, h, deadline);
  auto pending = std::make_unique<detail::PendingReduce>();
  pending->group = state_;
  pending->header = h;
  pending->op = op;
  pending->deadline = deadline;
#if NDGC_HAVE_NCCL
  if (!h.device.is_cpu()) {  // finished here: the Work only divides and writes back
    nccl_for(*state_, h, deadline).all_reduce(s.data, s.count(), h.dtype, op, h, deadline);
    pending->staged.emplace(std::move(s));
    return Work(std::move(pending));
  }
#endif
  const MPI_Datatype type = detail::mpi_type(h.dtype);
  const MPI_Op mop = detail::mpi_op(op, h.dtype);
  const std::size_t elem = size_of(h.dtype);
  const std::int64_t chunk = detail::chunk_elements(h.dtype);
  for (std::int64_t begin = 0; begin < s.count(); begin += chunk) {
    const int n = int(std::min(chunk, s.count() - begin));
    MPI_Request r = MPI_REQUEST_NULL;
    mpi.check(MPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(s.data) + std::size_t(begin) * elem, n, type, mop,
                             mpi.comm(), &r),
              h, "MPI_Iallreduce");
    pending->requests.push_back(r);
  }
  pending->staged.emplace(std::move(s));
  return Work(std::move(pending));
}

void ProcessGroup::all_reduce(NDArray& a, ReduceOp op) {
  ndgc::detail::enter();
  detail::Communicator& mpi = state_->mpi;
  std::lock_guard lock(mpi.mu);
  mpi.check_usable("all_reduce");
  const Clock::time_point deadline = mpi.deadline();
  Header h;
  Staged s = agree_on_all_reduce(mpi, a, op, h, deadline);
#if NDGC_HAVE_NCCL
  if (!h.device.is_cpu()) {
    nccl_for(*state_, h, deadline).all_reduce(s.data, s.count(), h.dtype, op, h, deadline);
  } else
#endif
  {
    // See Note [Blocking payload].
    const MPI_Datatype type = detail::mpi_type(h.dtype);
    const MPI_Op mop = detail::mpi_op(op, h.dtype);
    const std::size_t elem = size_of(h.dtype);
    const std::int64_t chunk = detail::chunk_elements(h.dtype);
    for (std::int64_t begin = 0; begin < s.count(); begin += chunk)
      detail::check_payload(mpi,
                            MPI_Allreduce(MPI_IN_PLACE, static_cast<char*>(s.data) + std::size_t(begin) * elem,
                                          int(std::min(chunk, s.count() - begin)), type, mop, mpi.comm()),
                            h, "MPI_Allreduce");
  }
  if (op == ReduceOp::mean) detail::divide_for_mean(s, mpi.size());
  s.write_back();
}

void ProcessGroup::broadcast(NDArray& a, int root) {
  ndgc::detail::enter();
  detail::Communicator& mpi = state_->mpi;
  std::lock_guard lock(mpi.mu);
  mpi.check_usable("broadcast");
  const Clock::time_point deadline = mpi.deadline();
  Local local;
  Header h;
  h.collective = Collective::broadcast;
  capture(local, [&] {
    if (root < 0 || root >= mpi.size())
      throw InvalidArgument(fmt::format("broadcast: root {} is not a rank of this group of {}", root, mpi.size()));
    Pinned p(a, "broadcast");
    check_gpu_supported(*p, "broadcast");
    ops::check_writable("broadcast", *p);
    h = detail::header_of(Collective::broadcast, *p, root);
    local.staged.emplace(a, "broadcast");
  });
  agree_or_throw(mpi, h, local, deadline);
  Staged& s = *local.staged;
#if NDGC_HAVE_NCCL
  if (!h.device.is_cpu()) {
    nccl_for(*state_, h, deadline).broadcast(s.data, s.count(), h.dtype, root, h, deadline);
    s.write_back();
    return;
  }
#endif
  // See Note [Blocking payload].
  const std::size_t elem = size_of(h.dtype);
  const std::int64_t chunk = detail::chunk_elements(h.dtype);
  for (std::int64_t begin = 0; begin < s.count(); begin += chunk)
    detail::check_payload(mpi,
                          MPI_Bcast(static_cast<char*>(s.data) + std::size_t(begin) * elem,
                                    int(std::min(chunk, s.count() - begin)), detail::mpi_type(h.dtype), root,
                                    mpi.comm()),
                          h, "MPI_Bcast");
  s.write_back();
}

NDArray ProcessGroup::all_gather(const NDArray& a, Site site) {
  ndgc::detail::enter();
  detail::Communicator& mpi = state_->mpi;
  std::lock_guard lock(mpi.mu);
  mpi.check_usable("all_gather");
  const Clock::time_point deadline = mpi.deadline();
  Local local;
  Header h;
  h.collective = Collective::all_gather;
  Shape out_shape;
  capture(local, [&] {
    Pinned p(a, "all_gather");
    check_gpu_supported(*p, "all_gather");
    ops::check_rank_room("all_gather", *p);
    if (p->size() > std::numeric_limits<int>::max())
      throw InvalidArgument(fmt::format("all_gather: {} has {} elements; at most 2^31-1 per rank can be gathered",
                                        ops::describe(*p), p->size()));
    h = detail::header_of(Collective::all_gather, *p, 0);
    out_shape.push_back(mpi.size());
    for (int i = 0; i < p->shape.rank(); ++i) out_shape.push_back(p->shape[i]);
    local.staged.emplace(a, "all_gather");
  });
  agree_or_throw(mpi, h, local, deadline);
  Staged& s = *local.staged;
  auto out = ops::new_output(out_shape, h.dtype, h.device, site, "all_gather");
#if NDGC_HAVE_NCCL
  if (!h.device.is_cpu()) {
    nccl_for(*state_, h, deadline).all_gather(s.data, out->data(), s.count(), h.dtype, h, deadline);
    return ops::publish_like(std::move(out), *s.pin, "all_gather");
  }
#endif
  // See Note [Blocking payload]: one call (rank r's rows land at r * count,
  // so chunks would need a derived datatype; all_gather is not on the
  // bandwidth path).
  const MPI_Datatype type = detail::mpi_type(h.dtype);
  detail::check_payload(
      mpi, MPI_Allgather(s.data, int(s.count()), type, out->data(), int(s.count()), type, mpi.comm()), h,
      "MPI_Allgather");
  return ops::publish_like(std::move(out), *s.pin, "all_gather");
}

void ProcessGroup::barrier() {
  ndgc::detail::enter();
  detail::Communicator& mpi = state_->mpi;
  std::lock_guard lock(mpi.mu);
  mpi.check_usable("barrier");
  const Clock::time_point deadline = mpi.deadline();
  Header h;
  h.collective = Collective::barrier;
  // The header exchange is itself a barrier: every rank has sent its header
  // before any receives all of them.
  agree_or_throw(mpi, h, Local{}, deadline);
}

// ---- Work ------------------------------------------------------------------------

Work::Work() noexcept = default;
Work::Work(std::unique_ptr<detail::PendingReduce> pending) noexcept : pending_(std::move(pending)) {}
Work::Work(Work&&) noexcept = default;
namespace {
void finish_quietly(detail::PendingReduce* pending) noexcept {
  if (pending && !pending->done) {
    try {
      pending->wait();
    } catch (...) {  // a destructor must not throw; wait() is where errors are reported
    }
  }
}
}  // namespace
Work& Work::operator=(Work&& other) noexcept {
  if (this != &other) {
    finish_quietly(pending_.get());
    pending_ = std::move(other.pending_);
  }
  return *this;
}
Work::~Work() { finish_quietly(pending_.get()); }
void Work::wait() {
  if (!pending_) throw InvalidArgument("Work::wait: this Work is empty (default-constructed or moved from)");
  pending_->wait();
}
bool Work::pending() const noexcept { return pending_ && !pending_->done; }

}  // namespace ndgc::distributed
