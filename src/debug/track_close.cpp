// Close-site tracking switch: the debug layer's handle on core's flag.
//
// The flag itself lives in core (src/core/autoclose.cpp), which reads
// NDGC_TRACK_CLOSE at start-up and consults it on every close; the debug
// layer only flips it. Thread-safety: one relaxed atomic.
#include "core/autoclose.hpp"
#include "ndgc/debug.hpp"

namespace ndgc::debug {

void set_track_close(bool on) noexcept { detail::g_track_close.store(on, std::memory_order_relaxed); }
bool track_close() noexcept { return detail::track_close(); }

}  // namespace ndgc::debug
