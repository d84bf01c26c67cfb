// NDScope: per-thread stacks of arrays to close at the end of a block.
//
// The innermost scope of each thread is a thread_local pointer; it records
// (slot, generation) pairs, never handles, so it keeps nothing alive and a
// tracing collector has nothing to see there (docs/design.md §7). Closing goes
// through the registry's close protocol, so arrays closed earlier by other
// means are skipped. attach() adds an array made elsewhere, keep()/detach()
// remove one. The scope's opening line is its close site (Note [Close sites]
// in core/key.hpp).
#include <algorithm>

#include <fmt/format.h>

#include "core/reclaim_queue.hpp"
#include "core/registry.hpp"
#include "ndgc/scope.hpp"

namespace ndgc {
namespace {

thread_local NDScope* t_innermost = nullptr;

std::string describe_scope(const void* context) {
  const Site& s = *static_cast<const Site*>(context);
  return fmt::format("opened at {}:{}", s.file_name(), s.line());
}

}  // namespace

NDScope::NDScope(Site site) : outer_(t_innermost), site_(site) { t_innermost = this; }

NDScope::~NDScope() {
  t_innermost = outer_;
  detail::enter();
  detail::Registry& reg = detail::Registry::instance();
  // See Note [Close sites] in core/key.hpp.
  const detail::CloseSite where{nullptr, &describe_scope, &site_};
  for (const Entry& e : arrays_) reg.request_close(e.slot, e.generation, detail::CloseReason::scope, &where, nullptr);
}

void NDScope::attach(const NDArray& array) {
  detail::enter();
  const detail::Key& k = detail::open_key(array, "NDScope::attach");
  for (const Entry& e : arrays_)
    if (e.slot == k.slot && e.generation == k.generation) return;
  arrays_.push_back({k.slot, k.generation});
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
