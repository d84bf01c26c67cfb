// NDScope: per-thread stacks of arrays to close at the end of a block.
//
// The innermost scope of each thread is a thread_local pointer; it records
// (slot, generation) pairs, never handles, so it keeps nothing alive and a
// tracing collector has nothing to see there (DESIGN.md §8). Closing goes
// through the registry's close protocol, so arrays closed earlier by other
// means are skipped.
#include <algorithm>

#include "core/reclaim_queue.hpp"
#include "core/registry.hpp"
#include "ndgc/scope.hpp"

namespace ndgc {
namespace {
thread_local NDScope* t_innermost = nullptr;
}

NDScope::NDScope() : outer_(t_innermost) { t_innermost = this; }

NDScope::~NDScope() {
  t_innermost = outer_;
  detail::enter();
  detail::Registry& reg = detail::Registry::instance();
  for (const Entry& e : arrays_) reg.request_close(e.slot, e.generation, detail::CloseReason::scope, nullptr, nullptr);
}

void NDScope::on_created(std::uint32_t slot, std::uint32_t generation) noexcept {
  if (NDScope* s = t_innermost) {
    try {
      s->arrays_.push_back({slot, generation});
    } catch (...) {
      // Out of memory recording it: the array then lives as long as its manager.
    }
  }
}

const NDArray& NDScope::keep(const NDArray& array) {
  if (const detail::Key* k = detail::key_of(array)) {
    auto it = std::find_if(arrays_.rbegin(), arrays_.rend(),
                           [&](const Entry& e) { return e.slot == k->slot && e.generation == k->generation; });
    if (it != arrays_.rend()) arrays_.erase(std::next(it).base());
  }
  return array;
}

const NDList& NDScope::keep(const NDList& arrays) {
  for (const NDArray& a : arrays) keep(a);
  return arrays;
}

std::size_t NDScope::tracked() const noexcept { return arrays_.size(); }

}  // namespace ndgc
