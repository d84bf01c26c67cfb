// Leak-debugging tools (DESIGN.md §5).
//
//   debug::set_track_close(true);      // or NDGC_TRACK_CLOSE=1
//   a.close();  a.sum();               // ArrayClosed: "... closed by close() at train.cpp:42"
#pragma once

namespace ndgc::debug {

// Close-site tracking: when on, every close records where it was asked for,
// and a later use of the closed array says so in its ArrayClosed message.
// Costs one small allocation per close of an array that handles still reach.
void set_track_close(bool on) noexcept;
bool track_close() noexcept;

}  // namespace ndgc::debug
