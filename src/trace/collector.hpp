// The collector: Boehm GC's set-up, when it collects, and the drain's share
// of its work (docs/design.md §7).
#pragma once

namespace ndgc::trace::detail {

// GC_INIT with finalizers on demand, the notifier, explicit thread
// registration allowed. Once; the library's start-up calls it on the main
// thread, before main().
void ensure_initialized() noexcept;

// A full collection now (registers the calling thread first), then a drain
// wake-up so that the next drain runs the finalizers it made ready.
void collect_now() noexcept;

// TraceHooks::on_wake: collect if the collect window has passed, run the
// pending finalizers, queue the leaked keys they found.
void on_wake() noexcept;

// Cheap check from allocation paths: wakes the drain when finalizers are
// pending or the collect window has passed.
void poke() noexcept;

}  // namespace ndgc::trace::detail
