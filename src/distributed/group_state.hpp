// What every ProcessGroup of the process shares: the MPI communicator and,
// in builds with NCCL, the NCCL communicator made on the first GPU collective.
//
// Thread-safety: members are used under mpi.mu.
#pragma once

#include <memory>

#include "distributed/communicator.hpp"
#if NDGC_HAVE_NCCL
#include "distributed/nccl_communicator.hpp"
#endif

namespace ndgc::distributed::detail {

class GroupState {
 public:
  Communicator mpi;
#if NDGC_HAVE_NCCL
  std::unique_ptr<NcclCommunicator> nccl;  // one per group, for the first GPU used
#endif
};

}  // namespace ndgc::distributed::detail
