// The MPI environment. See Note [One MPI environment] in environment.hpp.
#include "distributed/environment.hpp"

#include <mutex>

#include <fmt/format.h>
#include <mpi.h>

#include "ndgc/error.hpp"

namespace ndgc::distributed::detail {

std::shared_ptr<Environment> Environment::instance() {
  static std::mutex mu;
  static std::shared_ptr<Environment> held;  // dies at exit; see Note [One MPI environment]
  std::lock_guard lock(mu);
  if (held) return held;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) throw DistributedError("ProcessGroup: MPI was already finalized in this process; it cannot start again");
  bool owns = false;
  if (!initialized) {
    int provided = 0;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      int length = 0;
      MPI_Error_string(rc, text, &length);
      throw DistributedError(fmt::format("ProcessGroup: MPI_Init_thread failed: {}", std::string(text, std::size_t(length))));
    }
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      throw DistributedError(fmt::format(
          "ProcessGroup: this MPI gives thread level {}, ndgc needs MPI_THREAD_SERIALIZED ({})", provided,
          int(MPI_THREAD_SERIALIZED)));
    }
    owns = true;
  }
  held = std::shared_ptr<Environment>(new Environment(owns));
  return held;
}

Environment::~Environment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_ && !finalized) MPI_Finalize();
}

}  // namespace ndgc::distributed::detail
