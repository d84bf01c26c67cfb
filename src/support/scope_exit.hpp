// ScopeExit: runs a function when the scope ends, by return or by exception
// (what std::experimental::scope_exit and absl::Cleanup do). For restoring a
// thread_local, emptying a kept buffer, or telling a pool a job finished.
//
//   const Block* outer = std::exchange(t_current, this);
//   ScopeExit restore{[&] { t_current = outer; }};
#pragma once

#include <utility>

namespace ndgc::support {

template <class F>
class ScopeExit {
 public:
  explicit ScopeExit(F fn) : f(std::move(fn)) {}
  ScopeExit(const ScopeExit&) = delete;
  ScopeExit& operator=(const ScopeExit&) = delete;
  ~ScopeExit() { f(); }

 private:
  F f;
};
template <class F>
ScopeExit(F) -> ScopeExit<F>;

}  // namespace ndgc::support
