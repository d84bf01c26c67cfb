// The trace detector's entry into the core: the TraceHooks table, registered
// by start-up code before main() (docs/design.md §7).
//
// A program enables the detector with gc::enable(gc::Detector::trace) or
// NDGC_AUTOCLOSE=trace; both reach this library only through the hooks, so
// the linker would drop it from a static link. The link option of ndgc::trace
// (-u ndgc_trace_anchor) names the anchor below, which pulls this object file
// in, and with it the start-up code and everything the hooks reference.
#include "core/autoclose.hpp"
#include "core/key.hpp"
#include "trace/collector.hpp"
#include "trace/key_heap.hpp"
#include "trace/object_heap.hpp"
#include "trace/threads.hpp"

namespace ndgc::trace::detail {
namespace {

void enable() {
  ensure_initialized();
  register_this_thread();
}

void disable() {}

constexpr ndgc::detail::TraceHooks kHooks{
    &enable, &disable, &collect_now, &on_wake, &register_this_thread, &new_handle, &delete_handle,
};

struct Startup {
  Startup() noexcept {
    (void)global_new_linked();
    ensure_initialized();
    ndgc::detail::set_key_heap(&kTraceKeyHeap);
    ndgc::detail::set_trace_hooks(&kHooks);
  }
} g_startup;

}  // namespace
}  // namespace ndgc::trace::detail

extern "C" {
extern const int ndgc_trace_anchor;
const int ndgc_trace_anchor = 1;
}
