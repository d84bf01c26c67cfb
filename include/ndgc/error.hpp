// Errors: every failure ndgc reports is an ndgc::Error (docs/design.md §8).
//
//   try { a.add(b); }
//   catch (const ndgc::ShapeMismatch& e) { std::cerr << e.what(); }
//   catch (const ndgc::Error& e) { ... }          // any library error
//
// A message names the operation, the arrays involved (name or UUID, shape,
// dtype, manager) and what to do about it. Bad input never crashes, never
// leaks and leaves managers and memory accounting consistent.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace ndgc {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A handle whose array was closed (by close(), its manager, a scope or auto-close).
class ArrayClosed : public Error { using Error::Error; };
// A manager used after close(), or an array asked to join a closed manager.
class ManagerClosed : public Error { using Error::Error; };
// Attachment to a manager after cap().
class ManagerCapped : public Error { using Error::Error; };
class ShapeMismatch : public Error { using Error::Error; };
class DTypeMismatch : public Error { using Error::Error; };
class DeviceMismatch : public Error { using Error::Error; };
class WorkspaceError : public Error { using Error::Error; };
class InvalidArgument : public Error { using Error::Error; };
// Malformed or missing input files (datasets, model files).
class DataError : public Error { using Error::Error; };
// A collective that failed (ndgc/distributed.hpp): ranks that disagree on the
// array, a time-out, an MPI or NCCL error. Names this rank and the collective.
class DistributedError : public Error { using Error::Error; };

// An allocation that would exceed a memory limit, after the reclaim queue was
// drained and the allocation retried.
class OutOfMemory : public Error {
 public:
  OutOfMemory(const std::string& message, std::size_t requested, std::size_t limit,
              std::size_t in_use)
      : Error(message), requested_(requested), limit_(limit), in_use_(in_use) {}
  std::size_t requested() const noexcept { return requested_; }
  std::size_t limit() const noexcept { return limit_; }
  std::size_t in_use() const noexcept { return in_use_; }

 private:
  std::size_t requested_, limit_, in_use_;
};

}  // namespace ndgc
