// The MPI environment: one owner per process, shared by every ProcessGroup.
//
// Note [One MPI environment]
// MPI may be initialised once per process and finalized once, and nothing of
// MPI may be called after MPI_Finalize. So the environment is one object
// behind a shared_ptr: the first ProcessGroup initialises MPI
// (MPI_Init_thread asking for MPI_THREAD_SERIALIZED, since the library
// serialises its calls; see Note [Time-outs] for why it never blocks inside
// MPI), every group holds a reference, and a function-local static holds one
// more, so MPI_Finalize runs once, at exit, after the last group is gone,
// whatever order statics die in. A program that initialised MPI itself keeps
// that job: the library then neither initialises nor finalizes. A process
// not started by mpirun initialises as an MPI singleton: a world of size 1.
//
// Thread-safety: instance() may be called from any thread.
#pragma once

#include <memory>

namespace ndgc::distributed::detail {

class Environment {
 public:
  // The process's environment, initialising MPI on the first call
  // (DistributedError when MPI_Init_thread fails).
  static std::shared_ptr<Environment> instance();
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

 private:
  explicit Environment(bool owns) noexcept : owns_(owns) {}
  bool owns_;  // this library initialised MPI, so it finalizes it
};

}  // namespace ndgc::distributed::detail
